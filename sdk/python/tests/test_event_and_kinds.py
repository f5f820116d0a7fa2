"""Events, contexts and the typed views of objects."""

import json

import pytest

from herald_sdk import Context, Event, GroupVersionKind, HandlerError, KubeObject, Update
from herald_sdk.kinds import Deployment, Node, Pod, resource_of

POD = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "web-0", "namespace": "shop", "resourceVersion": "42", "uid": "u1",
                 "labels": {"app": "web"}, "annotations": {"note": "x"},
                 "ownerReferences": [{"kind": "ReplicaSet", "name": "web-5d8f7"}]},
    "spec": {"nodeName": "node-1",
             "initContainers": [{"name": "init", "image": "busybox:1.36"}],
             "containers": [{"name": "app", "image": "nginx:1.27"}, {"name": "side", "image": "envoy:1"}]},
    "status": {"phase": "Running", "containerStatuses": [{"restartCount": 2}, {"restartCount": 1}]},
}


def context(key="shop/web-0", kind=Pod.KIND, **flags):
    return Context(kind=kind, resource="pods", key=key, resource_version="42", **flags)


def test_key_splits_into_namespace_and_name():
    event = Event(context(), json.dumps(POD))
    assert (event.namespace, event.name) == ("shop", "web-0")
    cluster_scoped = Event(context("node-1", Node.KIND), "{}")
    assert (cluster_scoped.namespace, cluster_scoped.name) == (None, "node-1")


def test_accessors_forward_the_context():
    event = Event(context(is_initial_list=True), json.dumps(POD))
    assert event.kind == GroupVersionKind("", "v1", "Pod")
    assert (event.resource, event.key, event.resource_version) == ("pods", "shop/web-0", "42")
    assert (event.is_initial_list, event.is_resync, event.final_state_unknown) == (True, False, False)


def test_objects_are_dicts_with_the_kinds_typed_view():
    pod = Event(context(), json.dumps(POD)).object
    assert isinstance(pod, Pod) and isinstance(pod, dict)
    assert pod == POD
    assert (pod.name, pod.namespace, pod.key, pod.uid, pod.resource_version) == (
        "web-0", "shop", "shop/web-0", "u1", "42")
    assert pod.labels == {"app": "web"} and pod.annotations == {"note": "x"}
    assert pod.owner_references[0]["name"] == "web-5d8f7"
    assert pod.group_version_kind == Pod.KIND
    assert pod.images == ["busybox:1.36", "nginx:1.27", "envoy:1"]
    assert [c["name"] for c in pod.containers] == ["app", "side"]
    assert (pod.phase, pod.node_name, pod.restart_count) == ("Running", "node-1", 3)


def test_unknown_kinds_are_generic_objects_and_missing_fields_read_empty():
    widget = Event(context("w", GroupVersionKind("example.com", "v1", "Widget")), "{}").object
    assert type(widget) is KubeObject
    assert (widget.name, widget.namespace, widget.labels, widget.status, widget.group_version_kind) == (
        "", None, {}, {}, None)
    assert Event(context(), "{}").object_as(Pod).containers == []


def test_workload_views_read_the_pod_template_and_selector():
    deployment = Deployment({
        "spec": {"selector": {"matchLabels": {"app": "web"},
                              "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]},
                                                   {"key": "legacy", "operator": "DoesNotExist"}]},
                 "template": {"spec": {"containers": [{"image": "web:2"}]}}},
        "status": {"readyReplicas": 2}})
    assert deployment.images == ["web:2"]
    assert deployment.selector == "app=web,tier in (a,b),!legacy"
    assert (deployment.replicas, deployment.ready_replicas) == (1, 2)


def test_update_parses_both_sides():
    newer = dict(POD, status={"phase": "Succeeded"})
    update = Update(context(), json.dumps(POD), json.dumps(newer))
    assert (update.old.phase, update.new.phase) == ("Running", "Succeeded")
    assert json.loads(update.new_json) == newer


def test_decode_errors_say_what_failed():
    with pytest.raises(HandlerError, match="decoding the object as JSON"):
        Event(context(), "{not json").object
    with pytest.raises(HandlerError, match="expected a JSON object, got list"):
        Update(context(), "[]", "{}").old


def test_resource_names():
    assert resource_of(Pod.KIND) == "pods"
    assert resource_of(GroupVersionKind("networking.k8s.io", "v1", "NetworkPolicy")) == "networkpolicies"
    assert resource_of(GroupVersionKind("example.com", "v1", "Gateway")) == "gateways"
    assert resource_of(GroupVersionKind("example.com", "v1", "Ingress")) == "ingresses"
    assert GroupVersionKind("apps", "v1", "Deployment").api_version == "apps/v1"
    assert str(Pod.KIND) == "v1/Pod"
