//! B10: the cost of one granted Kubernetes write from a plugin. The
//! `kube-actor` fixture merge-patches a ConfigMap `PATCHES` times in one
//! handler call (through the SDK, the WIT import, the grant check, the rate
//! limit, the audit record and the host's kube client); the baseline makes
//! the same patches from a native kube-rs client over its own connection,
//! in the same run, against the same embedded API server.

use crate::b1_throughput::context;
use crate::cluster::Cluster;
use crate::measure::Samples;
use crate::settings::Settings;
use crate::table::{Goal, Row, Unit};
use herald::plugin::{LoadOptions, LoadedPlugin, PluginInstance, RequestedLimits};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use std::time::{Duration, Instant};

/// The namespace of the patched ConfigMap.
const NAMESPACE: &str = "bench-0";

/// Runs B10.
pub fn run(
    settings: &Settings,
    fixtures: &crate::fixtures::Fixtures,
    runtime: &tokio::runtime::Runtime,
) -> Vec<Row> {
    let patches: usize = if settings.quick { 5 } else { 200 };
    // Clients spawn their connection tasks on the runtime they are made in.
    let _entered = runtime.enter();
    let cluster = runtime.block_on(Cluster::start());
    let client = cluster.client();
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), NAMESPACE);
    let target: ConfigMap = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "patched"}, "data": {"n": "0"}
    }))
    .unwrap();
    runtime
        .block_on(config_maps.create(&PostParams::default(), &target))
        .expect("creating the patched ConfigMap");

    let plugin = load_actor(&cluster, fixtures, runtime);
    let mut instance = PluginInstance::new(plugin).expect("instantiating kube-actor");
    let command = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "command", "namespace": NAMESPACE, "resourceVersion": "1",
                     "labels": {"herald.dev/kube-actor": "command"}},
        "data": {
            "verb": "patch", "kind": "ConfigMap", "namespace": NAMESPACE, "name": "patched",
            "patchType": "merge", "body": json!({"data": {"n": "1"}}).to_string(),
            "repeat": patches.to_string(),
        }
    })
    .to_string();
    let native_patch = Patch::Merge(json!({"data": {"n": "1"}}));
    let params = PatchParams::default();
    let (mut native, mut plugin) = (Samples::new(), Samples::new());
    for rep in 0..settings.repetitions {
        crate::progress(format!(
            "B10 repetition {}/{}",
            rep + 1,
            settings.repetitions
        ));
        let started = Instant::now();
        runtime.block_on(async {
            for _ in 0..patches {
                config_maps
                    .patch("patched", &params, &native_patch)
                    .await
                    .expect("native patch");
            }
        });
        native.push(started.elapsed().as_secs_f64() * 1e6 / patches as f64);
        let started = Instant::now();
        instance
            .on_add(&context(), &command)
            .expect("kube-actor's patches");
        plugin.push(started.elapsed().as_secs_f64() * 1e6 / patches as f64);
    }
    vec![
        Row::ratio_of(
            "B10",
            "one granted merge patch from a plugin, against the same patch from native kube-rs",
            Unit::Micros,
            native,
            plugin,
            Goal::None,
        )
        .with_details(format!(
            "µs per patch of a ConfigMap on the embedded API server, {patches} sequential patches per repetition; the plugin's include the handler call delivering the command, divided among its patches"
        )),
    ]
}

/// kube-actor granted patches on ConfigMaps, unthrottled, with a deadline
/// long enough for every patch of one call.
fn load_actor(
    cluster: &Cluster,
    fixtures: &crate::fixtures::Fixtures,
    runtime: &tokio::runtime::Runtime,
) -> LoadedPlugin {
    let rule =
        json!({"verbs": ["patch"], "group": "", "kind": "ConfigMap", "namespaces": [NAMESPACE]});
    let options = LoadOptions {
        config: Some(json!({"writes": [rule]}).to_string()),
        overrides: RequestedLimits {
            call_deadline: Some(Duration::from_secs(60)),
            memory_bytes: None,
        },
        policy: herald::plugin::LimitPolicy {
            max: herald::plugin::Limits {
                call_deadline: Duration::from_secs(60),
                ..herald::plugin::LimitPolicy::default().max
            },
            ..herald::plugin::LimitPolicy::default()
        },
        ..cluster.granted_writes(runtime, rule)
    };
    LoadedPlugin::load(
        fixtures.engine(),
        &herald_test_artifacts::bytes(herald_test_artifacts::KUBE_ACTOR),
        options,
    )
    .expect("loading kube-actor")
}
