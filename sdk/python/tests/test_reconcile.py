"""The reconcile API over the stand-in host: keys mapped from each kind,
the cache's current state reconciled, requeues merged, failures reported
after every key is tried, finalizers and conditions."""

import json

import pytest

from herald_sdk import HandlerError, Manifest, kube, testing
from herald_sdk.kinds import ConfigMap, Deployment, Namespace, Pod, ReplicaSet
from herald_sdk.manifest import Delivery
from herald_sdk.reconcile import (Action, Apply, Cleanup, Controller, Reconciler, Request,
                                  finalizer, set_condition)


def deployment(name, resource_version="1", **metadata):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "shop", "resourceVersion": resource_version,
                         **metadata}}


def replica_set(name, *owners):
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": "shop", "ownerReferences": list(owners)}}


def owner(api_version, kind, name, controller=True):
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": "u",
            "controller": controller}


def used_by(config_map):
    """A ConfigMap's `used-by` label: the Deployments of its namespace it maps to."""
    names = config_map.labels.get("used-by", "")
    return [Request(config_map.namespace, n) for n in names.split(".") if n]


class Rollouts(Reconciler):
    """Records each reconcile; answers with what `results` says per name."""

    results = {}

    @classmethod
    def controller(cls):
        return (Controller(Deployment, Manifest("rollouts", "0.1.0"))
                .owns(ReplicaSet)
                .watches(ConfigMap, used_by))

    def __init__(self):
        self.seen = []

    def reconcile(self, request, obj):
        self.seen.append((request, obj))
        answer = self.results.get(request.name)
        if isinstance(answer, Exception):
            raise answer
        return answer


@pytest.fixture(autouse=True)
def declared():
    """Rollouts' kinds visible to the cache, as the host makes them."""
    testing.declare(Rollouts)
    Rollouts.results = {}


def test_every_kind_the_controller_names_is_subscribed_coalesced():
    subscriptions = Rollouts.manifest().subscriptions
    assert [s.kind.kind for s in subscriptions] == ["Deployment", "ReplicaSet", "ConfigMap"]
    assert all(s.delivery_mode == Delivery.COALESCED for s in subscriptions)


def test_a_primary_notification_reconciles_its_key_against_the_caches_current_state():
    testing.cache_insert(deployment("web", "7"))
    plugin = Rollouts()
    plugin.on_add(testing.added(deployment("web", "5")))
    [(request, obj)] = plugin.seen
    assert request == Request("shop", "web") and str(request) == "shop/web"
    assert isinstance(obj, Deployment) and obj.resource_version == "7"
    assert testing.requeues() == []


def test_an_object_gone_from_the_cache_is_reconciled_as_none():
    plugin = Rollouts()
    plugin.on_delete(testing.deleted(deployment("web")))
    assert plugin.seen == [(Request("shop", "web"), None)]


def test_an_owned_object_reconciles_its_controller_owner_only():
    plugin = Rollouts()
    for rs in (replica_set("a", owner("apps/v1", "StatefulSet", "db")),
               replica_set("b", owner("example.com/v1", "Deployment", "web")),
               replica_set("c", owner("apps/v1", "Deployment", "web", controller=False)),
               replica_set("d")):
        plugin.on_add(testing.added(rs))
    assert plugin.seen == []
    rs = replica_set("web-5d9f", owner("apps/v1", "Deployment", "web"))
    plugin.on_update(testing.updated(rs, rs))
    assert [r for r, _ in plugin.seen] == [Request("shop", "web")]


def test_a_cluster_scoped_primary_is_looked_up_without_the_owned_objects_namespace():
    seen = []

    class Namespaces(Reconciler):
        @classmethod
        def controller(cls):
            return Controller(Namespace, Manifest("ns", "0.1.0")).cluster_scoped().owns(ConfigMap)

        def reconcile(self, request, obj):
            seen.append(request)

    marker = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": "marker", "namespace": "shop",
                           "ownerReferences": [owner("v1", "Namespace", "shop")]}}
    testing.declare(Namespaces)
    Namespaces().on_add(testing.added(marker))
    assert seen == [Request(None, "shop")]


def test_a_watched_object_reconciles_what_its_map_returns_and_the_soonest_requeue_wins():
    Rollouts.results = {"web": Action.requeue_after(60), "api": Action.requeue_after(10),
                        "jobs": Action.await_change()}
    plugin = Rollouts()
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "settings", "namespace": "shop", "labels": {"used-by": "web.api.jobs"}}}
    plugin.on_add(testing.added(cm))
    assert [r.name for r, _ in plugin.seen] == ["web", "api", "jobs"]
    assert testing.requeues() == [10.0]


def test_a_failed_key_is_raised_after_every_other_key_is_tried_and_nothing_is_requeued():
    Rollouts.results = {"web": RuntimeError("quota exceeded"), "api": Action.requeue_after(1)}
    plugin = Rollouts()
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "settings", "namespace": "shop", "labels": {"used-by": "web.api"}}}
    with pytest.raises(HandlerError, match="reconciling shop/web: quota exceeded"):
        plugin.on_add(testing.added(cm))
    assert len(plugin.seen) == 2
    assert testing.requeues() == []


def test_an_unknown_result_is_an_error_naming_the_key():
    Rollouts.results = {"web": "done"}
    with pytest.raises(HandlerError, match="shop/web.*'done', not an Action"):
        Rollouts().on_add(testing.added(deployment("web")))


def test_a_notification_of_a_kind_the_controller_does_not_name_is_an_error():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0", "namespace": "shop"}}
    with pytest.raises(HandlerError, match="Pod"):
        Rollouts().on_add(testing.added(pod, kind=Pod))


def test_a_negative_requeue_is_refused():
    with pytest.raises(ValueError, match="negative"):
        Action.requeue_after(-1)


def finalized(obj, cleanup_error=None):
    ran = []

    def reconcile(event):
        ran.append(type(event).__name__)
        if isinstance(event, Cleanup) and cleanup_error is not None:
            raise cleanup_error
        return Action.requeue_after(60) if isinstance(event, Apply) else None

    action = finalizer(Deployment(obj), "example.com/cleanup", reconcile)
    return ran, action


def patched_finalizers():
    [call] = testing.take_kube_calls()
    assert (call.verb, call.name, call.patch_type) == ("patch", "web", "merge")
    return json.loads(call.body)["metadata"]


def test_a_finalizer_is_added_then_applied_then_cleaned_up_and_removed():
    obj = deployment("web", "4", finalizers=["other"])
    ran, action = finalized(obj)
    assert (ran, action) == ([], Action.await_change())
    assert patched_finalizers() == {"finalizers": ["other", "example.com/cleanup"], "resourceVersion": "4"}

    obj["metadata"].update(finalizers=["other", "example.com/cleanup"], resourceVersion="5")
    ran, action = finalized(obj)
    assert (ran, action) == (["Apply"], Action.requeue_after(60))
    assert testing.take_kube_calls() == []

    obj["metadata"].update(deletionTimestamp="2026-11-29T10:00:00Z", resourceVersion="6")
    with pytest.raises(RuntimeError, match="bucket busy"):
        finalized(obj, RuntimeError("bucket busy"))
    assert testing.take_kube_calls() == []
    ran, _ = finalized(obj)
    assert ran == ["Cleanup"]
    assert patched_finalizers()["finalizers"] == ["other"]

    obj["metadata"].update(finalizers=["other"], resourceVersion="7")
    assert finalized(obj) == ([], Action.await_change())
    assert testing.take_kube_calls() == []


def test_a_state_the_instance_already_wrote_its_finalizer_change_at_is_left_alone():
    stale = deployment("stale", "20", finalizers=["example.com/cleanup"],
                       deletionTimestamp="2026-11-29T10:00:00Z")
    assert finalized(stale)[0] == ["Cleanup"]
    assert len(testing.take_kube_calls()) == 1
    # The same, stale state again (another notification mapped here before
    # the cache saw the write): no second cleanup, no write.
    assert finalized(stale) == ([], Action.await_change())
    assert testing.take_kube_calls() == []
    live = deployment("stale-add", "30")
    finalized(live)
    assert len(testing.take_kube_calls()) == 1
    assert finalized(live) == ([], Action.await_change())
    assert testing.take_kube_calls() == []
    newer = deployment("stale-add", "31", finalizers=["example.com/cleanup"])
    assert finalized(newer)[0] == ["Apply"]


def test_a_cleanup_that_succeeded_is_not_run_again_when_the_removal_conflicts():
    obj = deployment("web", "40", uid="0b5e-web", finalizers=["example.com/cleanup"],
                     deletionTimestamp="2026-11-29T10:00:00Z")
    # A write that landed after the deletion makes the removal conflict...
    testing.script_kube("patch", raises=kube.Conflict("the object has been modified"), times=1)
    with pytest.raises(kube.Conflict, match="removing finalizer"):
        finalized(obj)
    assert len(testing.take_kube_calls()) == 1
    # ...and the retry, at the newer state, only removes the finalizer.
    obj["metadata"]["resourceVersion"] = "41"
    assert finalized(obj) == ([], Action.await_change())
    assert patched_finalizers()["finalizers"] == []
    # A new object of the same name (another UID) is cleaned up as usual.
    obj["metadata"].update(uid="7c1d-web", resourceVersion="50")
    assert finalized(obj)[0] == ["Cleanup"]


def test_a_finalizer_write_refused_keeps_its_kind_and_names_the_finalizer():
    testing.script_kube("patch", raises=kube.NotGranted("patch apps/Deployment is not granted"))
    with pytest.raises(kube.NotGranted, match="adding finalizer example.com/cleanup: patch apps"):
        finalized(deployment("web"))


def test_set_condition_moves_the_transition_time_only_when_the_status_changes():
    conditions = []
    ready = {"type": "Ready", "status": "True", "reason": "Synced", "message": "ok",
             "observedGeneration": 1, "lastTransitionTime": "t1"}
    assert set_condition(conditions, ready)
    assert not set_condition(conditions, dict(ready, lastTransitionTime="t2"))
    assert conditions[0]["lastTransitionTime"] == "t1"
    assert set_condition(conditions, dict(ready, observedGeneration=2, lastTransitionTime="t3"))
    assert conditions[0]["lastTransitionTime"] == "t1" and conditions[0]["observedGeneration"] == 2
    assert set_condition(conditions, dict(ready, status="False", reason="Missing", lastTransitionTime="t4"))
    assert (conditions[0]["status"], conditions[0]["lastTransitionTime"]) == ("False", "t4")
    assert len(conditions) == 1


def test_generation_changed_reconciles_spec_changes_requeues_and_other_kinds_only():
    class SpecChanges(Rollouts):
        @classmethod
        def controller(cls):
            return super().controller().generation_changed()

    def at(generation, resource_version):
        return deployment("web", resource_version, generation=generation)

    testing.cache_insert(at(2, "12"))
    plugin = SpecChanges()
    plugin.on_update(testing.updated(at(1, "10"), at(1, "11")))   # a status change
    plugin.on_update(testing.resynced(at(1, "11")))
    assert plugin.seen == []
    rs = replica_set("web-1", owner("apps/v1", "Deployment", "web"))
    plugin.on_update(testing.updated(at(1, "11"), at(2, "12")))   # a spec change
    plugin.on_update(testing.updated(at(2, "12"), at(2, "12")))   # a requeue
    plugin.on_update(testing.updated(rs, rs))                     # an owned object
    assert len(plugin.seen) == 3
