//! B13: a look-up by a cache index against the label-selector scan it
//! replaces, as the cache grows. Each cache holds ReplicaSets in groups of
//! three owned by one Deployment (its UID in their `ownerReferences`, its
//! name in their `app` label, one namespace per group); a look-up asks for
//! one group. The baseline is what `rollout-watch` did before indexes: list
//! the namespace by the `app` label (a scan of the store) and keep the
//! objects owned by the UID; the index look-up is `Store::by_index` on the
//! owner index. Both find the same three objects (checked); the index's
//! cost should not grow with the cache.

use crate::measure::Samples;
use crate::settings::Settings;
use crate::table::{Goal, Row, Unit};
use herald::selector::LabelSelector;
use herald::store::ObjectReader;
use herald::store::{CachedObject, IndexKey, Store, Transform};
use std::sync::Arc;
use std::time::Instant;

/// ReplicaSets per owner.
const GROUP: usize = 3;

/// Namespaces the groups are spread over.
const NAMESPACES: usize = 10;

/// Runs B13.
pub fn run(settings: &Settings) -> Vec<Row> {
    let (sizes, lookups): (&[usize], usize) = if settings.quick {
        (&[300, 3_000], 50)
    } else {
        (&[1_000, 10_000, 100_000], 1_000)
    };
    sizes
        .iter()
        .map(|&objects| measure(settings, objects, lookups))
        .collect()
}

fn measure(settings: &Settings, objects: usize, lookups: usize) -> Row {
    let store = Store::new();
    for i in 0..objects {
        store.upsert(Arc::new(replica_set(i)));
    }
    let owner = IndexKey::Owner;
    store.add_index(&owner);
    let groups = objects / GROUP;
    let (mut scan, mut index) = (Samples::new(), Samples::new());
    for rep in 0..settings.repetitions {
        crate::progress(format!(
            "B13 {objects} objects, repetition {}/{}",
            rep + 1,
            settings.repetitions
        ));
        // The same groups for both, spread over the cache.
        let picked: Vec<usize> = (0..lookups)
            .map(|n| (n * 7919 + rep * 104_729) % groups)
            .collect();
        let started = Instant::now();
        for &group in &picked {
            let (namespace, app, uid) = identity(group);
            let selector = LabelSelector::parse(&format!("app={app}")).expect("selector");
            let found: Vec<_> = ObjectReader::list(&store, Some(&namespace), &selector)
                .into_iter()
                .filter(|o| o.json().contains(&uid))
                .collect();
            assert_eq!(found.len(), GROUP, "the scan finds the group");
        }
        scan.push(started.elapsed().as_secs_f64() * 1e6 / lookups as f64);
        let started = Instant::now();
        for &group in &picked {
            let (namespace, _, uid) = identity(group);
            let found = store
                .by_index(&owner, &uid, Some(&namespace))
                .expect("the owner index is kept");
            assert_eq!(found.len(), GROUP, "the index finds the group");
        }
        index.push(started.elapsed().as_secs_f64() * 1e6 / lookups as f64);
    }
    Row::ratio_of(
        format!("B13.{}k", objects / 1000),
        format!(
            "the ReplicaSets of one owner among {objects} cached: owner index, against a label-selector list filtered by owner"
        ),
        Unit::Micros,
        scan,
        index,
        Goal::None,
    )
    .with_details(format!(
        "µs per look-up of {GROUP} objects, {lookups} look-ups per repetition"
    ))
}

/// The namespace, `app` label and owner UID of group `group`.
fn identity(group: usize) -> (String, String, String) {
    (
        format!("bench-{}", group % NAMESPACES),
        format!("app-{group}"),
        format!("00000000-0000-4000-8000-{group:012x}"),
    )
}

/// ReplicaSet `i`, third of its group's.
fn replica_set(i: usize) -> CachedObject {
    let group = i / GROUP;
    let (namespace, app, uid) = identity(group);
    let json = serde_json::json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {
            "name": format!("{app}-{i}"), "namespace": namespace, "resourceVersion": i.to_string(),
            "uid": format!("10000000-0000-4000-8000-{i:012x}"),
            "labels": {"app": app, "pod-template-hash": format!("{i:x}")},
            "annotations": {"deployment.kubernetes.io/revision": (i % GROUP + 1).to_string()},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": app,
                                 "uid": uid, "controller": true, "blockOwnerDeletion": true}]
        },
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": app}},
            "template": {"metadata": {"labels": {"app": app}},
                         "spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]}}
        },
        "status": {"replicas": 3, "readyReplicas": 3, "availableReplicas": 3}
    });
    CachedObject::from_json(
        &json.to_string(),
        "apps/v1",
        "ReplicaSet",
        Transform::default(),
    )
    .expect("bench ReplicaSets parse")
}
