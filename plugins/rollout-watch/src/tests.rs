//! The handler against the SDK's stand-in host.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use herald_sdk::k8s_openapi::api::apps::v1::{
    DeploymentCondition, DeploymentSpec, DeploymentStatus, ReplicaSetSpec, ReplicaSetStatus,
};
use herald_sdk::k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use herald_sdk::k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, ObjectMeta, OwnerReference,
};
use herald_sdk::testing;

use super::*;

fn labels() -> std::collections::BTreeMap<String, String> {
    [("app".to_owned(), "web".to_owned())].into()
}

fn deployment(image: &str, revision: u32, generation: i64, status: [i32; 5]) -> Deployment {
    let [observed, updated, ready, available, unavailable] = status;
    let template = PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(labels()),
            ..ObjectMeta::default()
        }),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "app".into(),
                image: Some(image.into()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
    };
    Deployment {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("shop".into()),
            uid: Some("uid-web".into()),
            generation: Some(generation),
            annotations: Some(
                [(
                    "deployment.kubernetes.io/revision".to_owned(),
                    revision.to_string(),
                )]
                .into(),
            ),
            ..ObjectMeta::default()
        },
        spec: DeploymentSpec {
            replicas: Some(3),
            selector: LabelSelector {
                match_labels: Some(labels()),
                match_expressions: None,
            },
            template,
            ..DeploymentSpec::default()
        },
        status: Some(DeploymentStatus {
            observed_generation: Some(i64::from(observed)),
            replicas: Some(updated.max(ready)),
            updated_replicas: Some(updated),
            ready_replicas: Some(ready),
            available_replicas: Some(available),
            unavailable_replicas: Some(unavailable),
            ..DeploymentStatus::default()
        }),
    }
}

fn replica_set(
    name: &str,
    owner_uid: &str,
    revision: u32,
    replicas: i32,
    ready: i32,
) -> ReplicaSet {
    ReplicaSet {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("shop".into()),
            labels: Some(labels()),
            annotations: Some(
                [(
                    "deployment.kubernetes.io/revision".to_owned(),
                    revision.to_string(),
                )]
                .into(),
            ),
            owner_references: Some(vec![OwnerReference {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                name: "web".into(),
                uid: owner_uid.into(),
                controller: Some(true),
                ..OwnerReference::default()
            }]),
            ..ObjectMeta::default()
        },
        spec: ReplicaSetSpec {
            replicas: Some(replicas),
            ..ReplicaSetSpec::default()
        },
        status: Some(ReplicaSetStatus {
            replicas,
            ready_replicas: Some(ready),
            ..ReplicaSetStatus::default()
        }),
    }
}

/// A fresh test host that knows the plugin's indexes.
fn reset() {
    testing::reset();
    testing::declare(&RolloutWatch::manifest());
}

#[test]
fn a_rollout_is_started_progresses_and_completes() {
    reset();
    testing::cache_insert(&replica_set("web-old", "uid-web", 1, 2, 2));
    testing::cache_insert(&replica_set("web-new", "uid-web", 2, 2, 1));
    testing::cache_insert(&replica_set("web-stale", "uid-web", 0, 0, 0));
    testing::cache_insert(&replica_set("other-app", "uid-other", 5, 1, 1));
    let mut plugin = RolloutWatch::default();

    let stable = deployment("nginx:1.26", 1, 1, [1, 3, 3, 3, 0]);
    let changed = deployment("nginx:1.27", 2, 2, [1, 3, 3, 3, 0]);
    let rolling = deployment("nginx:1.27", 2, 2, [2, 1, 3, 2, 1]);
    let further = deployment("nginx:1.27", 2, 2, [2, 2, 3, 3, 0]);
    let done = deployment("nginx:1.27", 2, 2, [2, 3, 3, 3, 0]);
    plugin
        .on_update(&testing::updated(&stable, &changed))
        .unwrap();
    plugin
        .on_update(&testing::updated(&changed, &rolling))
        .unwrap();
    plugin
        .on_update(&testing::updated(&rolling, &further))
        .unwrap();
    plugin
        .on_update(&testing::updated(&further, &done))
        .unwrap();
    plugin.on_update(&testing::updated(&done, &done)).unwrap();
    assert_eq!(
        testing::take_messages(),
        [
            "started deployment=shop/web generation=2",
            "progressed deployment=shop/web updated=1/3 ready=3 available=2 new=web-new:1/2 old=web-old:2/2",
            "unavailable deployment=shop/web replicas=1",
            "progressed deployment=shop/web updated=2/3 ready=3 available=3 new=web-new:1/2 old=web-old:2/2",
            "completed deployment=shop/web generation=2 replicas=3 new=web-new:1/2",
        ]
    );
}

#[test]
fn scaling_is_not_a_rollout() {
    reset();
    testing::subscribe(herald_sdk::GroupVersionKind::of::<ReplicaSet>());
    let before = deployment("nginx:1.27", 2, 2, [2, 3, 3, 3, 0]);
    let mut after = deployment("nginx:1.27", 2, 3, [2, 3, 3, 3, 0]);
    after.spec.replicas = Some(5);
    let mut growing = deployment("nginx:1.27", 2, 3, [3, 4, 4, 4, 0]);
    growing.spec.replicas = Some(5);
    RolloutWatch::default()
        .on_update(&testing::updated(&before, &after))
        .unwrap();
    RolloutWatch::default()
        .on_update(&testing::updated(&after, &growing))
        .unwrap();
    assert_eq!(
        testing::take_messages(),
        [
            "scaled deployment=shop/web from=3 to=5",
            "progressed deployment=shop/web updated=4/5 ready=4 available=4 new=- old=-",
        ]
    );
}

#[test]
fn adds_deletes_and_replica_set_events() {
    reset();
    let mut plugin = RolloutWatch::default();
    plugin
        .on_add(&testing::added(&deployment(
            "nginx:1",
            1,
            1,
            [0, 0, 0, 0, 0],
        )))
        .unwrap();
    plugin
        .on_add(&testing::listed(&deployment(
            "nginx:1",
            1,
            4,
            [4, 3, 3, 3, 0],
        )))
        .unwrap();
    plugin
        .on_add(&testing::added(&replica_set("web-new", "uid-web", 1, 1, 1)))
        .unwrap();
    plugin
        .on_update(&testing::resynced(&deployment(
            "nginx:1",
            1,
            4,
            [4, 3, 3, 3, 0],
        )))
        .unwrap();
    plugin
        .on_delete(&testing::deleted(&replica_set(
            "web-new", "uid-web", 1, 1, 1,
        )))
        .unwrap();
    plugin
        .on_delete(&testing::deleted(&deployment(
            "nginx:1",
            1,
            1,
            [0, 0, 0, 0, 0],
        )))
        .unwrap();
    plugin
        .on_delete(&testing::vanished(&deployment(
            "nginx:1",
            1,
            1,
            [0, 0, 0, 0, 0],
        )))
        .unwrap();
    assert_eq!(
        testing::take_messages(),
        [
            "created deployment=shop/web generation=1 replicas=3",
            "listed deployment=shop/web generation=4 replicas=3 updated=3 available=3 complete=true",
            "deleted deployment=shop/web",
            "vanished deployment=shop/web",
        ]
    );
}

#[test]
fn failed_look_ups_degrade_to_question_marks() {
    reset();
    let before = deployment("nginx:1", 1, 1, [1, 0, 0, 0, 0]);
    let after = deployment("nginx:1", 1, 1, [1, 1, 1, 1, 0]);
    RolloutWatch::default()
        .on_update(&testing::updated(&before, &after))
        .unwrap();
    assert_eq!(
        testing::take_messages(),
        [
            "failed lookup=replicasets deployment=shop/web error=not subscribed to apps/v1/ReplicaSet",
            "progressed deployment=shop/web updated=1/3 ready=1 available=1 new=? old=?",
        ]
    );
}

#[test]
fn completion_waits_for_old_replicas_and_the_new_generation() {
    let mut progress = Progress::of(&deployment("nginx:1", 1, 2, [2, 3, 3, 3, 0]));
    assert!(progress.is_complete());
    progress.replicas = 4;
    assert!(
        !progress.is_complete(),
        "an old replica is still terminating"
    );
    progress.replicas = 3;
    progress.observed_generation = 1;
    assert!(
        !progress.is_complete(),
        "the controller has not seen generation 2"
    );
}

/// A plugin whose clock reads `now`, its metrics checked as the host would.
fn timed(now: &Rc<Cell<Duration>>) -> RolloutWatch {
    reset();
    testing::subscribe(herald_sdk::GroupVersionKind::of::<ReplicaSet>());
    let now = Rc::clone(now);
    RolloutWatch::with_clock(Box::new(move || now.get()))
}

#[test]
fn a_rollout_is_timed_from_its_template_change_to_its_completion() {
    let now = Rc::new(Cell::new(Duration::from_secs(10)));
    let mut plugin = timed(&now);
    let stable = deployment("nginx:1.26", 1, 1, [1, 3, 3, 3, 0]);
    let changed = deployment("nginx:1.27", 2, 2, [1, 3, 3, 3, 0]);
    let rolling = deployment("nginx:1.27", 2, 2, [2, 1, 3, 2, 1]);
    let done = deployment("nginx:1.27", 2, 2, [2, 3, 3, 3, 0]);
    plugin
        .on_update(&testing::updated(&stable, &changed))
        .unwrap();
    now.set(Duration::from_secs(40));
    plugin
        .on_update(&testing::updated(&changed, &rolling))
        .unwrap();
    assert!(testing::observations(metrics::DURATION, &["shop"]).is_empty());
    now.set(Duration::from_millis(95_500));
    plugin
        .on_update(&testing::updated(&rolling, &done))
        .unwrap();
    assert_eq!(testing::observations(metrics::DURATION, &["shop"]), [85.5]);

    // Scaling is not a rollout, and completing it times nothing.
    let mut scaled = deployment("nginx:1.27", 2, 3, [2, 3, 3, 3, 0]);
    scaled.spec.replicas = Some(5);
    let mut grown = deployment("nginx:1.27", 2, 3, [3, 5, 5, 5, 0]);
    grown.spec.replicas = Some(5);
    grown.status.as_mut().unwrap().replicas = Some(5);
    plugin.on_update(&testing::updated(&done, &scaled)).unwrap();
    plugin
        .on_update(&testing::updated(&scaled, &grown))
        .unwrap();
    assert_eq!(testing::observations(metrics::DURATION, &["shop"]).len(), 1);
    assert!(
        testing::take_messages()
            .iter()
            .any(|line| line.starts_with("completed deployment=shop/web generation=3")),
        "the scale completed, untimed"
    );
    assert!(
        testing::metric_updates()
            .iter()
            .all(|update| update.name == metrics::DURATION)
    );
}

#[test]
fn a_rollout_whose_start_was_not_seen_is_not_timed() {
    let now = Rc::new(Cell::new(Duration::from_secs(10)));
    // A rebuilt instance, or one that joined mid-rollout.
    let mut plugin = timed(&now);
    let rolling = deployment("nginx:1.27", 2, 2, [2, 1, 3, 2, 1]);
    let done = deployment("nginx:1.27", 2, 2, [2, 3, 3, 3, 0]);
    plugin.on_add(&testing::listed(&rolling)).unwrap();
    plugin
        .on_update(&testing::updated(&rolling, &done))
        .unwrap();
    assert!(testing::observations(metrics::DURATION, &["shop"]).is_empty());

    // A deleted Deployment's rollout is forgotten.
    let stable = deployment("nginx:1.27", 2, 2, [2, 3, 3, 3, 0]);
    let changed = deployment("nginx:1.28", 3, 3, [2, 3, 3, 3, 0]);
    plugin
        .on_update(&testing::updated(&stable, &changed))
        .unwrap();
    plugin.on_delete(&testing::deleted(&changed)).unwrap();
    let done = deployment("nginx:1.28", 3, 3, [3, 3, 3, 3, 0]);
    plugin
        .on_update(&testing::updated(&changed, &done))
        .unwrap();
    assert!(testing::observations(metrics::DURATION, &["shop"]).is_empty());
}

/// `deployment` named `name`, stuck past its deadline when `stuck`.
fn stuck(name: &str, is_stuck: bool) -> Deployment {
    let mut deployment = deployment("nginx:1.27", 2, 2, [2, 1, 3, 2, 1]);
    deployment.metadata.name = Some(name.into());
    let (status, reason) = if is_stuck {
        ("False", "ProgressDeadlineExceeded")
    } else {
        ("True", "ReplicaSetUpdated")
    };
    deployment.status.as_mut().unwrap().conditions = Some(vec![DeploymentCondition {
        type_: Some("Progressing".into()),
        status: Some(status.into()),
        reason: Some(reason.into()),
        ..DeploymentCondition::default()
    }]);
    deployment
}

#[test]
fn stuck_rollouts_are_counted_per_namespace_from_the_cache() {
    let now = Rc::new(Cell::new(Duration::ZERO));
    let mut plugin = timed(&now);
    // The host updates its cache before each delivery; so do the tests.
    let mut deliver = |old: &Deployment, new: &Deployment| {
        testing::cache_insert(new);
        plugin.on_update(&testing::updated(old, new)).unwrap();
    };
    testing::cache_insert(&stuck("api", false));
    deliver(&stuck("web", false), &stuck("web", true));
    assert_eq!(testing::metric(metrics::STUCK, &["shop"]), Some(1.0));
    deliver(&stuck("api", false), &stuck("api", true));
    assert_eq!(testing::metric(metrics::STUCK, &["shop"]), Some(2.0));
    deliver(&stuck("web", true), &stuck("web", true));
    assert_eq!(
        testing::take_metric_updates().len(),
        2,
        "no change, no count"
    );
    deliver(&stuck("web", true), &stuck("web", false));
    assert_eq!(testing::metric(metrics::STUCK, &["shop"]), Some(1.0));
    testing::cache_remove::<Deployment>(Some("shop"), "api");
    plugin
        .on_delete(&testing::deleted(&stuck("api", true)))
        .unwrap();
    assert_eq!(testing::metric(metrics::STUCK, &["shop"]), Some(0.0));
    let lines = testing::take_messages();
    let stuck_lines: Vec<&String> = lines
        .iter()
        .filter(|line| line.starts_with("stuck"))
        .collect();
    assert_eq!(
        stuck_lines,
        [
            "stuck deployment=shop/web deadline=600s",
            "stuck deployment=shop/api deadline=600s"
        ]
    );

    // A rebuilt instance counts again from the cache, at the first change.
    let mut rebuilt = timed(&now);
    testing::cache_insert(&stuck("a", true));
    testing::cache_insert(&stuck("b", true));
    rebuilt.on_add(&testing::listed(&stuck("b", true))).unwrap();
    assert_eq!(testing::metric(metrics::STUCK, &["shop"]), Some(2.0));
}
