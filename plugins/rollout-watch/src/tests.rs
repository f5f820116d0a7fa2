//! The handler against the SDK's stand-in host.

use herald_sdk::k8s_openapi::api::apps::v1::{
    DeploymentSpec, DeploymentStatus, ReplicaSetSpec, ReplicaSetStatus,
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

#[test]
fn a_rollout_is_started_progresses_and_completes() {
    testing::reset();
    testing::cache_insert(&replica_set("web-old", "uid-web", 1, 2, 2));
    testing::cache_insert(&replica_set("web-new", "uid-web", 2, 2, 1));
    testing::cache_insert(&replica_set("web-stale", "uid-web", 0, 0, 0));
    testing::cache_insert(&replica_set("other-app", "uid-other", 5, 1, 1));
    let mut plugin = RolloutWatch;

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
    testing::reset();
    testing::subscribe(herald_sdk::GroupVersionKind::of::<ReplicaSet>());
    let before = deployment("nginx:1.27", 2, 2, [2, 3, 3, 3, 0]);
    let mut after = deployment("nginx:1.27", 2, 3, [2, 3, 3, 3, 0]);
    after.spec.replicas = Some(5);
    let mut growing = deployment("nginx:1.27", 2, 3, [3, 4, 4, 4, 0]);
    growing.spec.replicas = Some(5);
    RolloutWatch
        .on_update(&testing::updated(&before, &after))
        .unwrap();
    RolloutWatch
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
    testing::reset();
    let mut plugin = RolloutWatch;
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
    testing::reset();
    let before = deployment("nginx:1", 1, 1, [1, 0, 0, 0, 0]);
    let after = deployment("nginx:1", 1, 1, [1, 1, 1, 1, 0]);
    RolloutWatch
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
