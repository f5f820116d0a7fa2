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


def test_metadata_is_read_without_the_rest_of_the_object():
    text = json.dumps(POD, indent=2)
    assert Event(context(), text).metadata == POD["metadata"]
    # Whatever follows the metadata is not read: a spec that is not JSON
    # does not stop it (the whole object would).
    broken = text[:text.index('"spec"')] + '"spec": {not json'
    event = Event(context(), broken)
    assert event.metadata["name"] == "web-0"
    with pytest.raises(HandlerError, match="as JSON"):
        event.object
    # Members before it are stepped over whatever they hold, a string that
    # looks like a metadata member included.
    tricky = {"apiVersion": 'v1", "metadata": {"name": "fake"}', "kind": "Pod", "metadata": {"name": "real"}}
    assert Event(context(), json.dumps(tricky)).metadata == {"name": "real"}
    nested = {"apiVersion": "v1", "spec": {"metadata": {"name": "template"}}, "metadata": {"name": "real"}}
    assert Event(context(), json.dumps(nested)).metadata == {"name": "real"}
    escaped = {"apiVersion": 'v1\\", "x', "metadata": {"name": "real"}}
    assert Event(context(), json.dumps(escaped)).metadata == {"name": "real"}
    assert Event(context(), '{"kind": "Pod"}').metadata == {}
    assert Event(context(), " { } ").metadata == {}
    # Once the object is parsed, the metadata is its own.
    parsed = Event(context(), text)
    assert parsed.object.name == "web-0"
    assert parsed.metadata is parsed.object["metadata"]


def test_an_update_reads_either_sides_metadata_alone():
    newer = dict(POD, metadata=dict(POD["metadata"], resourceVersion="43"))
    update = Update(context(), json.dumps(POD), json.dumps(newer))
    assert (update.old_metadata["resourceVersion"], update.new_metadata["resourceVersion"]) == ("42", "43")
    declined = Update(context(), None, json.dumps(newer))
    declined._old_json = None
    with pytest.raises(HandlerError, match="OLD_STATE"):
        declined.old_metadata


@pytest.mark.parametrize("text, problem", [
    ("[]", "expected a JSON object at char 0"),
    ('{"metadata": []}', "metadata is a list, not an object"),
    ('{"kind": "Pod" "metadata": {}}', "expected ',' or '}' at char 15"),
    ('{"kind" "Pod"}', "expected ':' at char 8"),
    ("{kind: 1}", "expected a member name at char 1"),
    ('{"kind": nope}', "expected a value at char 9"),
    ('{"kind": "Pod",}', "expected a member name at char 15"),
    ('{"kind": "Pod", ', "the text ends inside the object"),
    ("", "the text ends inside the object"),
    ('{"kind": "Pod", "metadata": {"name": }}', "expected a value at char 37"),
    ('{"kind": "Pod", "metadata":', "expected a value at char 27"),
])
def test_metadata_errors_say_what_failed(text, problem):
    with pytest.raises(HandlerError, match="decoding the object's metadata: " + problem.replace("(", r"\(")):
        Event(context(), text).metadata


def test_resource_names():
    assert resource_of(Pod.KIND) == "pods"
    assert resource_of(GroupVersionKind("networking.k8s.io", "v1", "NetworkPolicy")) == "networkpolicies"
    assert resource_of(GroupVersionKind("example.com", "v1", "Gateway")) == "gateways"
    assert resource_of(GroupVersionKind("example.com", "v1", "Ingress")) == "ingresses"
    assert GroupVersionKind("apps", "v1", "Deployment").api_version == "apps/v1"
    assert str(Pod.KIND) == "v1/Pod"
