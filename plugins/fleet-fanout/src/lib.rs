//! `fleet-fanout`: one plugin acting on several clusters from one daemon
//! (world 0.6.0, [`herald_sdk::cluster`]).
//!
//! A ConfigMap labelled `herald.dev/fan-out: "true"` in any cluster the
//! plugin runs on is copied, with its data, into the same namespace and
//! name in every other one of its clusters, labelled
//! `herald.dev/fanned-from: <cluster>` (and without the fan-out label, so a
//! copy is never fanned out again). A change is copied again; a delete
//! deletes the copies that came from that cluster. Each copy is applied
//! server-side with the plugin's field manager, so copying twice changes
//! nothing.
//!
//! The operator runs it on the clusters it should span
//! (`plugins.fleet-fanout.clusters: ["*"]`) and grants, per cluster, the
//! reads of its subscription and the writes of its copies (`clusters` on
//! each rule): a cluster its write grant does not name gets no copies, and
//! the refusal is in the plugin's log and the audit log.

use herald_sdk::k8s_openapi::api::core::v1::ConfigMap;
use herald_sdk::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use herald_sdk::kube::{Api, DeleteParams};
use herald_sdk::{Error, Event, Handler, Manifest, Subscription, Update, Verb, WriteRule, cluster};

/// The label that asks for a ConfigMap to be copied everywhere.
pub const FAN_OUT: &str = "herald.dev/fan-out";
/// The label a copy carries: the cluster it came from.
pub const FANNED_FROM: &str = "herald.dev/fanned-from";

/// The plugin; it keeps no state between calls.
#[derive(Default)]
pub struct FleetFanout;

impl Handler for FleetFanout {
    fn manifest() -> Manifest {
        Manifest::new("fleet-fanout", env!("CARGO_PKG_VERSION"))
            .subscribe(
                Subscription::to::<ConfigMap>()
                    .labels(format!("{FAN_OUT}=true"))
                    .coalesced(),
            )
            .write(
                WriteRule::new::<ConfigMap>()
                    .verbs([Verb::Get, Verb::Apply, Verb::Delete])
                    .all_namespaces(),
            )
    }

    fn on_add(&mut self, event: &Event) -> Result<(), Error> {
        fan_out(&event.object()?)
    }

    fn on_update(&mut self, update: &Update) -> Result<(), Error> {
        fan_out(&update.new()?)
    }

    fn on_delete(&mut self, event: &Event) -> Result<(), Error> {
        let source: ConfigMap = event.object()?;
        let (namespace, name) = identity(&source)?;
        let origin = cluster::current();
        for other in others(&origin) {
            cluster::within(&other, || {
                let configmaps = Api::<ConfigMap>::namespaced(namespace);
                match configmaps.get(name) {
                    Ok(copy) if copied_from(&copy) == Some(origin.as_str()) => {
                        configmaps.delete(name, &DeleteParams::default())?;
                        herald_sdk::info!(
                            "deleted {namespace}/{name} in {other}: gone from {origin}"
                        );
                        Ok(())
                    }
                    // Not a copy of this one (or already gone): not ours to delete.
                    Ok(_) => Ok(()),
                    Err(error) if error.is_not_found() => Ok(()),
                    Err(error) => Err(error.into()),
                }
            })?;
        }
        Ok(())
    }
}

/// Copies `source` into every other cluster of the plugin's.
fn fan_out(source: &ConfigMap) -> Result<(), Error> {
    let (namespace, name) = identity(source)?;
    let origin = cluster::current();
    let copy = copy_of(source, &origin);
    let mut failed = Vec::new();
    for other in others(&origin) {
        let applied = cluster::within(&other, || {
            Api::<ConfigMap>::namespaced(namespace).apply(name, &copy, true)?;
            Ok(())
        });
        match applied {
            Ok(()) => herald_sdk::info!("copied {namespace}/{name} from {origin} to {other}"),
            // One cluster refusing (not granted, unreachable) does not
            // keep the copy from the others; the call fails at the end, so
            // the host retries it.
            Err(error) => failed.push(format!("{other}: {}", error.message())),
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Error::new(format!(
            "copying {namespace}/{name} from {origin}: {}",
            failed.join("; ")
        )))
    }
}

/// The copy of `source` made in another cluster: its data, labelled with
/// the cluster it came from.
fn copy_of(source: &ConfigMap, origin: &str) -> ConfigMap {
    let mut labels = source.metadata.labels.clone().unwrap_or_default();
    labels.remove(FAN_OUT);
    labels.insert(FANNED_FROM.to_owned(), origin.to_owned());
    ConfigMap {
        metadata: ObjectMeta {
            name: source.metadata.name.clone(),
            namespace: source.metadata.namespace.clone(),
            labels: Some(labels),
            ..ObjectMeta::default()
        },
        data: source.data.clone(),
        binary_data: source.binary_data.clone(),
        ..ConfigMap::default()
    }
}

/// The cluster a copy came from, if it is one.
fn copied_from(config_map: &ConfigMap) -> Option<&str> {
    config_map
        .metadata
        .labels
        .as_ref()?
        .get(FANNED_FROM)
        .map(String::as_str)
}

/// Every cluster of the plugin's but `origin`.
fn others(origin: &str) -> Vec<String> {
    cluster::names()
        .into_iter()
        .filter(|name| name != origin)
        .collect()
}

/// The namespace and name of `config_map`.
fn identity(config_map: &ConfigMap) -> Result<(&str, &str), Error> {
    match (&config_map.metadata.namespace, &config_map.metadata.name) {
        (Some(namespace), Some(name)) => Ok((namespace, name)),
        _ => Err(Error::new("a ConfigMap without a namespace or name")),
    }
}

herald_sdk::export_plugin!(FleetFanout);

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use herald_sdk::kube::KubeError;
    use herald_sdk::testing;
    use std::collections::BTreeMap;

    fn settings(labels: &[(&str, &str)]) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some("settings".into()),
                namespace: Some("shop".into()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([("color".to_owned(), "blue".to_owned())])),
            ..ConfigMap::default()
        }
    }

    #[test]
    fn a_config_map_is_applied_in_every_other_cluster_labelled_with_its_origin() {
        testing::reset();
        testing::set_clusters(["east", "west", "north"]);
        testing::set_cluster("west");
        let source = settings(&[(FAN_OUT, "true"), ("app", "shop")]);
        FleetFanout.on_add(&testing::added(&source)).unwrap();
        let writes = testing::take_writes();
        let clusters: Vec<&str> = writes.iter().map(|w| w.cluster.as_str()).collect();
        assert_eq!(
            clusters,
            ["east", "north"],
            "never back into its own cluster"
        );
        for write in &writes {
            assert_eq!(write.verb, herald_sdk::Verb::Apply);
            let body = write.body.as_ref().unwrap();
            assert_eq!(body["metadata"]["labels"][FANNED_FROM], "west");
            assert_eq!(body["metadata"]["labels"]["app"], "shop");
            assert!(
                body["metadata"]["labels"].get(FAN_OUT).is_none(),
                "a copy is not fanned out again"
            );
            assert_eq!(body["data"]["color"], "blue");
        }
        assert_eq!(cluster::current(), "west", "every copy ends back home");
    }

    #[test]
    fn one_cluster_refusing_does_not_keep_the_copy_from_the_others() {
        testing::reset();
        testing::set_clusters(["east", "west", "north"]);
        testing::set_cluster("west");
        testing::respond_once(
            herald_sdk::Verb::Apply,
            "*",
            Err(KubeError::NotGranted("no write grant in east".into())),
        );
        let error = FleetFanout
            .on_add(&testing::added(&settings(&[(FAN_OUT, "true")])))
            .unwrap_err();
        assert!(
            error
                .message()
                .contains("east: not-granted: no write grant in east"),
            "{error:?}"
        );
        let clusters: Vec<String> = testing::take_writes()
            .into_iter()
            .map(|w| w.cluster)
            .collect();
        assert_eq!(clusters, ["east", "north"]);
    }

    #[test]
    fn a_delete_removes_only_the_copies_that_came_from_that_cluster() {
        testing::reset();
        testing::set_clusters(["east", "west"]);
        testing::set_cluster("west");
        let ours = serde_json_value(&settings(&[(FANNED_FROM, "west")]));
        testing::respond_once(herald_sdk::Verb::Get, "shop/settings", Ok(ours));
        FleetFanout
            .on_delete(&testing::deleted(&settings(&[(FAN_OUT, "true")])))
            .unwrap();
        let calls: Vec<(herald_sdk::Verb, String)> = testing::take_writes()
            .into_iter()
            .map(|c| (c.verb, c.cluster))
            .collect();
        assert_eq!(
            calls,
            [
                (herald_sdk::Verb::Get, "east".to_owned()),
                (herald_sdk::Verb::Delete, "east".to_owned())
            ]
        );
        // A ConfigMap of the same name that is not our copy stays.
        let theirs = serde_json_value(&settings(&[]));
        testing::respond_once(herald_sdk::Verb::Get, "shop/settings", Ok(theirs));
        FleetFanout
            .on_delete(&testing::deleted(&settings(&[(FAN_OUT, "true")])))
            .unwrap();
        let verbs: Vec<herald_sdk::Verb> =
            testing::take_writes().into_iter().map(|c| c.verb).collect();
        assert_eq!(verbs, [herald_sdk::Verb::Get]);
    }

    fn serde_json_value(config_map: &ConfigMap) -> herald_sdk::serde_json::Value {
        herald_sdk::serde_json::to_value(config_map).unwrap()
    }
}
