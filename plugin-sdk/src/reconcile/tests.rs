use super::*;
use crate::kube::{KubeError, PatchType, Verb};
use crate::testing;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use std::cell::RefCell;

thread_local! {
    /// What the test reconciler saw: each request and whether its object
    /// was cached.
    static SEEN: RefCell<Vec<(String, bool)>> = const { RefCell::new(Vec::new()) };
}

fn seen() -> Vec<(String, bool)> {
    SEEN.with(|seen| seen.take())
}

/// Deployments owning ReplicaSets, following ConfigMaps named in their
/// `follows` annotation; `fail/*` fails, `slow/*` asks to be looked at
/// again in a minute, everything else in five.
#[derive(Default)]
struct Rollouts;

fn followers(config_map: &ObjectView<'_>) -> Vec<Request> {
    let namespace = config_map.metadata().namespace();
    cache::list::<Deployment>(namespace, None)
        .unwrap_or_default()
        .into_iter()
        .filter(|d| {
            d.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("follows"))
                .is_some_and(|name| name == config_map.metadata().name())
        })
        .map(|d| Request::new(namespace, d.metadata.name.unwrap_or_default()))
        .collect()
}

impl Reconciler for Rollouts {
    type Object = Deployment;

    fn controller() -> Controller {
        Controller::new::<Deployment>(Manifest::new("rollouts", "0.1.0"))
            .owns::<ReplicaSet>()
            .watches::<ConfigMap>(followers)
    }

    fn reconcile(
        &mut self,
        request: &Request,
        object: Option<Deployment>,
    ) -> Result<Action, Error> {
        SEEN.with(|seen| {
            seen.borrow_mut()
                .push((request.to_string(), object.is_some()))
        });
        match request.namespace.as_deref() {
            Some("fail") => Err(Error::new("it broke")),
            Some("slow") => Ok(Action::requeue_after(Duration::from_secs(60))),
            _ => Ok(Action::requeue_after(Duration::from_secs(300))),
        }
    }
}

fn deployment(namespace: &str, name: &str) -> Deployment {
    let mut deployment = Deployment::default();
    deployment.metadata.namespace = Some(namespace.into());
    deployment.metadata.name = Some(name.into());
    deployment
}

fn replica_set(namespace: &str, name: &str, owners: Vec<OwnerReference>) -> ReplicaSet {
    let mut set = ReplicaSet::default();
    set.metadata.namespace = Some(namespace.into());
    set.metadata.name = Some(name.into());
    set.metadata.owner_references = Some(owners);
    set
}

fn owner(api_version: &str, kind: &str, name: &str, controller: bool) -> OwnerReference {
    OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: name.into(),
        uid: format!("uid-{name}"),
        controller: Some(controller),
        ..OwnerReference::default()
    }
}

#[test]
fn every_kind_is_subscribed_coalesced() {
    let manifest = Rollouts::controller().manifest();
    let kinds: Vec<_> = manifest
        .subscriptions
        .iter()
        .map(|s| {
            (
                s.kind.kind.clone(),
                s.delivery == crate::Delivery::Coalesced,
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("Deployment".to_owned(), true),
            ("ReplicaSet".to_owned(), true),
            ("ConfigMap".to_owned(), true)
        ]
    );
}

#[test]
fn a_primary_object_is_reconciled_from_the_cache_and_a_gone_one_as_none() {
    testing::reset();
    let web = deployment("shop", "web");
    testing::cache_insert(&web);
    let mut handler = Reconcile::<Rollouts>::default();
    handler.on_add(&testing::added(&web)).unwrap();
    assert_eq!(seen(), [("shop/web".to_owned(), true)]);
    assert_eq!(testing::take_requeues(), [Duration::from_secs(300)]);

    testing::cache_remove::<Deployment>(Some("shop"), "web");
    handler.on_delete(&testing::deleted(&web)).unwrap();
    assert_eq!(seen(), [("shop/web".to_owned(), false)]);
}

#[test]
fn an_owned_object_reconciles_its_controller_owner_only() {
    testing::reset();
    testing::cache_insert(&deployment("shop", "web"));
    let mut handler = Reconcile::<Rollouts>::default();
    let owned = replica_set(
        "shop",
        "web-5d9c",
        vec![
            owner("apps/v1", "Deployment", "other", false),
            owner("apps/v1", "Deployment", "web", true),
        ],
    );
    handler.on_add(&testing::added(&owned)).unwrap();
    assert_eq!(seen(), [("shop/web".to_owned(), true)]);

    // A controller of another kind, or of the same kind in another group,
    // is not this controller's.
    for stranger in [
        owner("apps/v1", "StatefulSet", "db", true),
        owner("example.com/v1", "Deployment", "web", true),
    ] {
        let orphan = replica_set("shop", "db-1", vec![stranger]);
        handler.on_add(&testing::added(&orphan)).unwrap();
        assert_eq!(seen(), []);
    }
    assert!(
        testing::take_requeues().len() == 1,
        "one reconcile, one requeue"
    );
}

#[test]
fn a_watched_object_reconciles_what_the_map_returns_and_the_soonest_requeue_wins() {
    testing::reset();
    let follows = |namespace: &str, name: &str| {
        let mut d = deployment(namespace, name);
        d.metadata.annotations = Some([("follows".to_owned(), "settings".to_owned())].into());
        testing::cache_insert(&d);
    };
    follows("slow", "a");
    follows("slow", "b");
    testing::cache_insert(&deployment("slow", "unrelated"));
    let mut settings = ConfigMap::default();
    settings.metadata.namespace = Some("slow".into());
    settings.metadata.name = Some("settings".into());
    let mut handler = Reconcile::<Rollouts>::default();
    handler
        .on_update(&testing::updated(&settings, &settings))
        .unwrap();
    let mut keys: Vec<_> = seen().into_iter().map(|(key, _)| key).collect();
    keys.sort();
    assert_eq!(keys, ["slow/a", "slow/b"]);
    assert_eq!(testing::take_requeues(), [Duration::from_secs(60)]);
}

#[test]
fn a_failed_key_fails_the_notification_after_every_key_is_tried() {
    testing::reset();
    let mut a = deployment("fail", "a");
    a.metadata.annotations = Some([("follows".to_owned(), "cm".to_owned())].into());
    let mut b = deployment("fail", "b");
    b.metadata.annotations = a.metadata.annotations.clone();
    testing::cache_insert(&a);
    testing::cache_insert(&b);
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some("fail".into());
    cm.metadata.name = Some("cm".into());
    let error = Reconcile::<Rollouts>::default()
        .on_add(&testing::added(&cm))
        .unwrap_err();
    assert!(error.message().contains("it broke"), "{error}");
    assert!(error.message().contains("reconciling fail/"), "{error}");
    assert_eq!(seen().len(), 2, "both keys were reconciled");
    assert_eq!(testing::take_requeues(), [], "a failure requeues nothing");
}

#[test]
fn a_kind_the_controller_does_not_name_is_an_error_naming_it() {
    testing::reset();
    let stray = k8s_openapi::api::core::v1::Secret::default();
    let mut handler = Reconcile::<Rollouts>::default();
    let error = handler.on_add(&testing::added(&stray)).unwrap_err();
    assert!(error.message().contains("Secret"), "{error}");
}

/// The ConfigMap `shop/web` at a new resourceVersion each time (as the
/// API server hands out), with `finalizers`.
fn with_finalizers(finalizers: &[&str], deleting: bool) -> ConfigMap {
    thread_local! {
        static VERSION: std::cell::Cell<u32> = const { std::cell::Cell::new(7) };
    }
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some("shop".into());
    cm.metadata.name = Some("web".into());
    cm.metadata.uid = Some("0b5e5c1e-web".into());
    cm.metadata.resource_version = Some(VERSION.with(|v| v.replace(v.get() + 1)).to_string());
    cm.metadata.finalizers =
        (!finalizers.is_empty()).then(|| finalizers.iter().map(|f| (*f).to_owned()).collect());
    if deleting {
        cm.metadata.deletion_timestamp = Some(Time("2026-11-29T00:00:00Z".parse().unwrap()));
    }
    cm
}

/// Runs `finalizer` on `object`, returning what the reconcile was asked.
fn finalize(object: ConfigMap) -> (Result<Action, Error>, Option<&'static str>) {
    let mut asked = None;
    let result = finalizer(object, "example.com/cleanup", |event| {
        asked = Some(match event {
            FinalizerEvent::Apply(_) => "apply",
            FinalizerEvent::Cleanup(_) => "cleanup",
        });
        Ok(Action::await_change())
    });
    (result, asked)
}

fn patched_finalizers() -> Vec<serde_json::Value> {
    testing::take_writes()
        .into_iter()
        .map(|call| {
            assert_eq!(call.patch_type, Some(PatchType::Merge));
            assert_eq!(call.target.key(), "shop/web");
            let body = call.body.unwrap();
            assert!(body["metadata"]["resourceVersion"].is_string(), "{body}");
            body["metadata"]["finalizers"].clone()
        })
        .collect()
}

#[test]
fn a_finalizer_is_added_then_applied_then_cleaned_up_once_and_removed() {
    testing::reset();
    // Live, without it: added (beside the others), nothing applied yet.
    let (result, asked) = finalize(with_finalizers(&["other"], false));
    assert_eq!((result.unwrap(), asked), (Action::AwaitChange, None));
    assert_eq!(
        patched_finalizers(),
        [serde_json::json!(["other", "example.com/cleanup"])]
    );
    // Live, with it: applied, nothing written.
    let (result, asked) = finalize(with_finalizers(&["example.com/cleanup"], false));
    assert_eq!(
        (result.unwrap(), asked),
        (Action::AwaitChange, Some("apply"))
    );
    assert_eq!(patched_finalizers(), Vec::<serde_json::Value>::new());
    // Being deleted, with it: cleaned up, then removed.
    let (result, asked) = finalize(with_finalizers(&["example.com/cleanup", "other"], true));
    assert_eq!(
        (result.unwrap(), asked),
        (Action::AwaitChange, Some("cleanup"))
    );
    assert_eq!(patched_finalizers(), [serde_json::json!(["other"])]);
    // Being deleted, without it: nothing to do.
    let (result, asked) = finalize(with_finalizers(&["other"], true));
    assert_eq!((result.unwrap(), asked), (Action::AwaitChange, None));
    assert_eq!(patched_finalizers(), Vec::<serde_json::Value>::new());
}

#[test]
fn a_state_the_instance_already_wrote_its_finalizer_change_at_is_left_alone() {
    testing::reset();
    // Cleaned up and the finalizer removed at one resourceVersion...
    let deleting = with_finalizers(&["example.com/cleanup"], true);
    let (result, asked) = finalize(deleting.clone());
    assert_eq!(
        (result.unwrap(), asked),
        (Action::AwaitChange, Some("cleanup"))
    );
    assert_eq!(patched_finalizers().len(), 1);
    // ...then the same, stale state again (another notification mapped
    // here before the cache saw the write): no second cleanup, no write.
    let (result, asked) = finalize(deleting);
    assert_eq!((result.unwrap(), asked), (Action::AwaitChange, None));
    assert_eq!(patched_finalizers(), Vec::<serde_json::Value>::new());
    // Added at one resourceVersion, then the stale state: not added twice.
    let live = with_finalizers(&[], false);
    finalize(live.clone()).0.unwrap();
    assert_eq!(patched_finalizers().len(), 1);
    finalize(live).0.unwrap();
    assert_eq!(patched_finalizers(), Vec::<serde_json::Value>::new());
    // A newer state is reconciled as usual.
    let (_, asked) = finalize(with_finalizers(&["example.com/cleanup"], false));
    assert_eq!(asked, Some("apply"));
}

#[test]
fn a_cleanup_that_succeeded_is_not_run_again_when_the_removal_conflicts() {
    testing::reset();
    // A write that landed after the deletion makes the removal conflict...
    testing::respond_once(
        Verb::Patch,
        "ConfigMap shop/web",
        Err(KubeError::Conflict("the object has been modified".into())),
    );
    let (result, asked) = finalize(with_finalizers(&["example.com/cleanup"], true));
    let error = result.unwrap_err();
    assert!(error.message().contains("removing finalizer"), "{error}");
    assert_eq!(asked, Some("cleanup"));
    assert_eq!(patched_finalizers().len(), 1);
    // ...and the retry, at the newer state, only removes the finalizer.
    let (result, asked) = finalize(with_finalizers(&["example.com/cleanup"], true));
    assert_eq!((result.unwrap(), asked), (Action::AwaitChange, None));
    assert_eq!(patched_finalizers(), [serde_json::json!([])]);
    // A new object of the same name (another UID) is cleaned up as usual.
    let mut reborn = with_finalizers(&["example.com/cleanup"], true);
    reborn.metadata.uid = Some("7c1d-web".into());
    let (_, asked) = finalize(reborn);
    assert_eq!(asked, Some("cleanup"));
}

#[test]
fn a_finalizer_the_plugin_may_not_write_fails_the_reconcile_naming_it_and_runs_nothing() {
    testing::reset();
    testing::respond(
        Verb::Patch,
        "ConfigMap shop/web",
        Err(KubeError::NotGranted(
            "patch ConfigMap in shop is not granted".into(),
        )),
    );
    // Adding it is refused: the error names the finalizer and the grant,
    // and nothing is applied without it.
    let (result, asked) = finalize(with_finalizers(&[], false));
    let error = result.unwrap_err().to_string();
    assert!(
        error.contains("adding finalizer example.com/cleanup") && error.contains("not granted"),
        "{error}"
    );
    assert_eq!(asked, None);
    // Removing it is refused after a cleanup: the same, and the finalizer
    // stays for the retry (which, the grant fixed, only removes it).
    let (result, asked) = finalize(with_finalizers(&["example.com/cleanup"], true));
    let error = result.unwrap_err().to_string();
    assert!(
        error.contains("removing finalizer example.com/cleanup") && error.contains("not granted"),
        "{error}"
    );
    assert_eq!(asked, Some("cleanup"));
}

#[test]
fn a_failed_cleanup_keeps_the_finalizer() {
    testing::reset();
    let result = finalizer(
        with_finalizers(&["example.com/cleanup"], true),
        "example.com/cleanup",
        |_| Err(Error::new("the bucket is still there")),
    );
    assert!(result.is_err());
    assert_eq!(testing::take_writes(), []);
}

fn condition(type_: &str, status: &str, at: &str, generation: i64) -> Condition {
    Condition {
        type_: type_.into(),
        status: status.into(),
        reason: "Because".into(),
        message: String::new(),
        observed_generation: Some(generation),
        last_transition_time: Time(at.parse().unwrap()),
    }
}

#[test]
fn a_condition_moves_its_transition_time_only_when_its_status_changes() {
    let mut conditions = Vec::new();
    assert!(set_condition(
        &mut conditions,
        condition("Ready", "False", "2026-11-29T10:00:00Z", 1)
    ));
    // Same status, newer generation: observedGeneration moves, the time not.
    assert!(set_condition(
        &mut conditions,
        condition("Ready", "False", "2026-11-29T11:00:00Z", 2)
    ));
    assert_eq!(conditions[0].observed_generation, Some(2));
    assert_eq!(
        conditions[0].last_transition_time.0.to_string(),
        "2026-11-29T10:00:00Z"
    );
    // Nothing new: no change.
    assert!(!set_condition(
        &mut conditions,
        condition("Ready", "False", "2026-11-29T12:00:00Z", 2)
    ));
    // The status flips: the time moves.
    assert!(set_condition(
        &mut conditions,
        condition("Ready", "True", "2026-11-29T13:00:00Z", 2)
    ));
    assert_eq!(
        conditions[0].last_transition_time.0.to_string(),
        "2026-11-29T13:00:00Z"
    );
    // Another type is added beside it.
    assert!(set_condition(
        &mut conditions,
        condition("Degraded", "False", "2026-11-29T13:00:00Z", 2)
    ));
    assert_eq!(conditions.len(), 2);
}

/// Rollouts, reconciling Deployments only when their generation changes.
#[derive(Default)]
struct SpecChanges(Rollouts);

impl Reconciler for SpecChanges {
    type Object = Deployment;

    fn controller() -> Controller {
        Rollouts::controller().generation_changed()
    }

    fn reconcile(
        &mut self,
        request: &Request,
        object: Option<Deployment>,
    ) -> Result<Action, Error> {
        self.0.reconcile(request, object)
    }
}

fn at(generation: i64, resource_version: &str) -> Deployment {
    let mut web = deployment("shop", "web");
    web.metadata.generation = Some(generation);
    web.metadata.resource_version = Some(resource_version.into());
    web
}

#[test]
fn generation_changed_reconciles_spec_changes_requeues_and_other_kinds_only() {
    testing::reset();
    testing::cache_insert(&at(2, "12"));
    let mut handler = Reconcile::<SpecChanges>::default();
    // A status change (same generation, newer resourceVersion), a resync.
    handler
        .on_update(&testing::updated(&at(1, "10"), &at(1, "11")))
        .unwrap();
    handler.on_update(&testing::resynced(&at(1, "11"))).unwrap();
    assert_eq!(seen(), []);
    // A spec change, and a requeue (the same state delivered again).
    handler
        .on_update(&testing::updated(&at(1, "11"), &at(2, "12")))
        .unwrap();
    handler
        .on_update(&testing::updated(&at(2, "12"), &at(2, "12")))
        .unwrap();
    // An owned object's update is not the primary's: reconciled.
    let set = replica_set(
        "shop",
        "web-1",
        vec![owner("apps/v1", "Deployment", "web", true)],
    );
    handler.on_update(&testing::updated(&set, &set)).unwrap();
    assert_eq!(seen().len(), 3);
    // Without it, every update reconciles.
    let mut every = Reconcile::<Rollouts>::default();
    every
        .on_update(&testing::updated(&at(1, "10"), &at(1, "11")))
        .unwrap();
    assert_eq!(seen().len(), 1);
}
