//! B16: the per-reconcile cost of a controller written with the reconcile
//! API (issue 41), against the same logic run natively. The
//! `deployment-summaries` fixture reconciles a Deployment-sized object: the
//! SDK's adapter maps the notification to its key and reads the
//! Deployment from the host's cache (a look-up across the component
//! boundary), the reconciler builds its summary ConfigMap and server-side
//! applies it through the host's kube client. The baseline does the same
//! natively, in the same run, against the same embedded API server: the
//! look-up in the same store, the Deployment decoded with serde, the same
//! summary, the apply from a native kube-rs client over its own
//! connection.

use crate::cluster::Cluster;
use crate::measure::Samples;
use crate::settings::Settings;
use crate::table::{Goal, Row, Unit};
use herald::gvk::Gvk;
use herald::plugin::{EventContext, GroupVersionKind};
use herald::plugin::{LoadedPlugin, PluginInstance};
use herald::store::{CachedObject, ObjectReader, Store, Transform};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

/// The fixture's summary, compiled natively for the baseline.
#[path = "../../plugins/fixtures/deployment-summaries/src/summary.rs"]
mod summary;
use summary::summary;

/// The namespace of the Deployments and their summaries.
const NAMESPACE: &str = "bench-0";

/// Runs B16.
pub fn run(
    settings: &Settings,
    fixtures: &crate::fixtures::Fixtures,
    runtime: &tokio::runtime::Runtime,
) -> Vec<Row> {
    let objects: usize = if settings.quick { 5 } else { 200 };
    let _entered = runtime.enter();
    let cluster = runtime.block_on(Cluster::start());
    let store = Arc::new(Store::new());
    let deployments: Vec<Arc<CachedObject>> = (0..objects)
        .map(|i| {
            let object = Arc::new(deployment(i));
            store.upsert(object.clone());
            object
        })
        .collect();
    let plugin = load(&cluster, fixtures, runtime);
    plugin.cache_scope().bind(vec![
        (
            Gvk::new("apps", "v1", "Deployment"),
            store.clone() as Arc<dyn ObjectReader>,
        ),
        (
            Gvk::new("", "v1", "ConfigMap"),
            Arc::new(Store::new()) as Arc<dyn ObjectReader>,
        ),
    ]);
    let mut instance = PluginInstance::new(plugin).expect("instantiating deployment-summaries");
    let config_maps: Api<ConfigMap> = Api::namespaced(cluster.client(), NAMESPACE);
    let params = PatchParams::apply("bench-native").force();
    let (mut native, mut plugin) = (Samples::new(), Samples::new());
    for rep in 0..settings.repetitions {
        crate::progress(format!(
            "B16 repetition {}/{}",
            rep + 1,
            settings.repetitions
        ));
        let started = Instant::now();
        runtime.block_on(async {
            for i in 0..objects {
                let name = format!("web-{i}");
                let cached = store.get(Some(NAMESPACE), &name).expect("cached");
                let deployment: Deployment =
                    serde_json::from_str(cached.json()).expect("a Deployment");
                let body = summary(&name, &deployment);
                config_maps
                    .patch(&format!("{name}-summary"), &params, &Patch::Apply(body))
                    .await
                    .expect("native apply");
            }
        });
        native.push(started.elapsed().as_secs_f64() * 1e6 / objects as f64);
        let started = Instant::now();
        for object in &deployments {
            let json = object.json();
            instance
                .on_update(&context(object), json, json)
                .expect("a reconcile");
        }
        plugin.push(started.elapsed().as_secs_f64() * 1e6 / objects as f64);
    }
    // Both wrote every summary, each as its own field manager.
    let written = runtime
        .block_on(config_maps.get(&format!("web-{}-summary", objects - 1)))
        .expect("the last summary");
    let managers: Vec<String> = written
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .filter_map(|entry| entry.manager)
        .collect();
    assert!(
        managers.iter().any(|m| m == "bench-native")
            && managers.iter().any(|m| m.contains("deployment-summaries")),
        "the summary's field managers: {managers:?}"
    );
    runtime.block_on(cluster.shutdown());
    vec![
        Row::ratio_of(
            "B16",
            "one reconcile (a cache look-up and a server-side apply) through the reconcile API, against the same logic run natively",
            Unit::Micros,
            native,
            plugin,
            Goal::None,
        )
        .with_details(format!(
            "µs per reconcile of a Deployment on the embedded API server, {objects} Deployments per repetition, each reconcile applying its summary ConfigMap; the plugin's include the notification's call, the adapter's mapping and its cache read"
        )),
    ]
}

/// The notification of Deployment `object` changing.
fn context(object: &CachedObject) -> EventContext {
    EventContext {
        kind: GroupVersionKind {
            group: "apps".into(),
            version: "v1".into(),
            kind: "Deployment".into(),
        },
        resource: "deployments".into(),
        key: format!("{NAMESPACE}/{}", object.name()),
        resource_version: "1".into(),
        is_initial_list: false,
        is_resync: false,
        final_state_unknown: false,
    }
}

/// Deployment `web-<i>` ([`crate::data::deployment`]), as the cache
/// holds it.
fn deployment(i: usize) -> CachedObject {
    let mut json = crate::data::deployment(NAMESPACE, i);
    json["metadata"]["resourceVersion"] = json!((1000 + i).to_string());
    json["metadata"]["uid"] = json!(format!("20000000-0000-4000-8000-{i:012x}"));
    CachedObject::from_json(
        &json.to_string(),
        "apps/v1",
        "Deployment",
        Transform::default(),
    )
    .expect("bench Deployments parse")
}

/// deployment-summaries granted applies of ConfigMaps in the bench namespace,
/// unthrottled.
fn load(
    cluster: &Cluster,
    fixtures: &crate::fixtures::Fixtures,
    runtime: &tokio::runtime::Runtime,
) -> LoadedPlugin {
    let rule = json!({"verbs": ["apply"], "group": "", "kind": "ConfigMap", "namespaces": ["*"]});
    let options = cluster.granted_writes(runtime, rule);
    LoadedPlugin::load(
        fixtures.engine(),
        &herald_test_artifacts::bytes(herald_test_artifacts::DEPLOYMENT_SUMMARIES),
        options,
    )
    .expect("loading deployment-summaries")
}
