"""The Kubernetes API helpers and Events against the stand-in host, which
records every call and answers from scripts."""

import pytest

from herald_sdk import EVENTS, GroupVersionKind, Manifest, Subscription, Verb, WriteRule, events, kube, testing
from herald_sdk.events import KubeEvent, ObjectReference
from herald_sdk.kinds import ConfigMap, Deployment, KubeObject, Namespace, Pod

WEB = {"apiVersion": "apps/v1", "kind": "Deployment",
       "metadata": {"name": "web", "namespace": "shop", "uid": "u-1", "resourceVersion": "7"},
       "spec": {"replicas": 2}}


def test_unscripted_get_is_not_found_and_writes_echo_the_body():
    deployments = kube.Api(Deployment, namespace="shop")
    with pytest.raises(kube.NotFound, match='deployments.apps "web" not found'):
        deployments.get("web")
    created = deployments.create({"metadata": {"name": "web"}, "spec": {"replicas": 1}})
    assert isinstance(created, Deployment)
    assert created == {"apiVersion": "apps/v1", "kind": "Deployment",
                       "metadata": {"name": "web", "namespace": "shop"}, "spec": {"replicas": 1}}
    assert deployments.patch("web", {"spec": {"replicas": 3}}) == {"spec": {"replicas": 3}}
    assert deployments.apply("web", {"spec": {"replicas": 4}}, force=True).name == "web"
    assert deployments.delete("web", uid="u-1", propagation="foreground") is None
    calls = testing.take_kube_calls()
    assert [(c.verb, c.kind, c.key) for c in calls] == [
        ("get", Deployment.KIND, "shop/web"), ("create", Deployment.KIND, "shop/web"),
        ("patch", Deployment.KIND, "shop/web"), ("apply", Deployment.KIND, "shop/web"),
        ("delete", Deployment.KIND, "shop/web")]
    assert calls[2].patch_type == "merge" and calls[2].object == {"spec": {"replicas": 3}}
    assert calls[3].force is True and calls[3].object["metadata"] == {"name": "web", "namespace": "shop"}
    assert (calls[4].uid, calls[4].resource_version, calls[4].propagation) == ("u-1", None, "foreground")
    assert testing.take_kube_calls() == []


def test_scripts_answer_in_order_and_run_out():
    testing.script_kube("get", Deployment, "web", namespace="shop", returns=WEB)
    testing.script_kube("update", raises=kube.Conflict("the object has been modified"), times=1)
    deployments = kube.Api("apps", "v1", "Deployment", namespace="shop")
    web = deployments.get("web")
    assert isinstance(web, Deployment) and web.replicas == 2 and web.uid == "u-1"
    assert deployments.get("web") == web, "a script without times answers every time"
    with pytest.raises(kube.NotFound):
        kube.Api(Deployment, namespace="other").get("web")
    web["spec"]["replicas"] = 5
    with pytest.raises(kube.Conflict) as conflict:
        deployments.replace("web", web)
    assert not conflict.value.retryable
    assert deployments.replace("web", web).replicas == 5, "the conflict was scripted once"
    assert [c.verb for c in testing.take_kube_calls()] == ["get", "get", "get", "update", "update"]


def test_status_variants_name_the_subresource():
    pods = kube.Api(Pod, namespace="shop")
    pods.replace_status("web-0", {"status": {"phase": "Running"}})
    patched = pods.patch_status("web-0", [{"op": "replace", "path": "/status/phase", "value": "Failed"}], type="json")
    assert patched == {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0", "namespace": "shop"}}
    pods.apply_status("web-0", {"status": {"phase": "Running"}})
    testing.script_kube("get", subresource="status", returns={"status": {"phase": "Running"}})
    assert pods.get_status("web-0").phase == "Running"
    calls = testing.take_kube_calls()
    assert [(c.verb, c.subresource) for c in calls] == [
        ("update", "status"), ("patch", "status"), ("apply", "status"), ("get", "status")]
    assert calls[1].patch_type == "json" and calls[1].object[0]["op"] == "replace"


def test_cluster_scoped_kinds_and_generic_objects():
    namespaces = kube.Api(Namespace)
    namespaces.apply("team-a", {"metadata": {"labels": {"team": "a"}}})
    call = testing.take_kube_calls()[0]
    assert (call.namespace, call.key) == (None, "team-a")
    assert call.object == {"apiVersion": "v1", "kind": "Namespace",
                           "metadata": {"labels": {"team": "a"}, "name": "team-a"}}
    widgets = kube.Api(GroupVersionKind("example.com", "v1", "Widget"), namespace="shop")
    assert type(widgets.create('{"metadata": {"name": "w"}}')) is KubeObject, "JSON text goes as is"
    assert testing.take_kube_calls()[0].body == '{"metadata": {"name": "w"}}'


def test_every_error_variant_can_be_scripted_and_caught_as_a_kube_error():
    errors = [
        kube.NotGranted("no write rule allows delete"), kube.NotFound("gone"), kube.AlreadyExists("there"),
        kube.Conflict("stale"), kube.Invalid("bad", [kube.Cause("FieldValueRequired", "Required", "spec.x")]),
        kube.Forbidden("rbac"), kube.TooManyRequests("slow down", retry_after_ms=1500),
        kube.Timeout("deadline"), kube.Unavailable("503"), kube.Failed("bad request", 400, "BadRequest"),
    ]
    api = kube.Api(ConfigMap, namespace="shop")
    for error in errors:
        testing.script_kube("get", raises=error, times=1)
        with pytest.raises(kube.KubeError) as raised:
            api.get("cm")
        assert raised.value is error
    assert [e.case for e in errors] == ["not-granted", "not-found", "already-exists", "conflict", "invalid",
                                        "forbidden", "too-many-requests", "timeout", "unavailable", "failed"]
    assert [e.retryable for e in errors].count(True) == 3
    assert errors[4].causes[0].field == "spec.x"
    assert errors[6].retry_after == 1.5
    assert (errors[9].code, errors[9].reason) == (400, "BadRequest")


def test_wrong_arguments_say_so():
    with pytest.raises(TypeError, match="three strings"):
        kube.Api("apps", "v1")
    with pytest.raises(ValueError, match="patch type must be one of merge, json, strategic"):
        kube.Api(Pod, namespace="a").patch("p", {}, type="yaml")
    with pytest.raises(ValueError, match="propagation must be one of"):
        kube.Api(Pod, namespace="a").delete("p", propagation="now")
    with pytest.raises(TypeError, match="name must be a non-empty string"):
        kube.Api(Pod, namespace="a").get("")
    with pytest.raises(ValueError, match="returns or raises, not both"):
        testing.script_kube(returns={}, raises=kube.NotFound("x"))
    assert testing.take_kube_calls() == []


class Scaler:
    @classmethod
    def manifest(cls):
        return (Manifest("scaler", "1").subscribe(Subscription.to(Deployment))
                .write(WriteRule.to(Deployment).verbs(Verb.GET, Verb.PATCH).namespaces("shop")))


def test_enforce_refuses_calls_outside_the_write_rules_as_the_host_does():
    testing.enforce(Scaler)
    shop = kube.Api(Deployment, namespace="shop")
    shop.patch("web", {"spec": {"replicas": 1}})
    with pytest.raises(kube.NotGranted, match="no write rule allows delete on apps/Deployment in namespace shop"):
        shop.delete("web")
    with pytest.raises(kube.NotGranted, match="patch on apps/Deployment subresource status"):
        shop.patch_status("web", {})
    with pytest.raises(kube.NotGranted, match="in namespace other"):
        kube.Api(Deployment, namespace="other").get("web")
    with pytest.raises(kube.NotGranted, match="events capability"):
        events.warning(WEB, "Scaled", "x")
    assert len(testing.take_kube_calls()) == 4 and len(testing.take_events()) == 1
    testing.enforce(None)
    kube.Api(Deployment, namespace="other").delete("web")


def test_enforce_allows_everything_a_wildcard_rule_and_the_capability_cover():
    testing.enforce(Manifest("x", "1").capability(EVENTS)
                    .write(WriteRule.to("", "Namespace").verbs("apply").all_namespaces()))
    kube.Api(Namespace).apply("a", {})
    events.normal(WEB, "Seen", "ok")
    assert len(testing.take_events()) == 1


def test_events_are_built_from_the_object():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0", "namespace": "shop", "uid": "p-1"}}
    events.warning(pod, "DisallowedImage", "image evil:1 is not allowed")
    events.normal(pod, "Labelled", "labelled it", action="Label", related=WEB)
    warning, normal = testing.take_events()
    assert warning == KubeEvent(
        regarding=ObjectReference(Pod.KIND, "shop", "web-0", "p-1", None), related=None, type="Warning",
        reason="DisallowedImage", action="DisallowedImage", note="image evil:1 is not allowed")
    assert (normal.type, normal.action) == ("Normal", "Label")
    assert normal.related == ObjectReference(Deployment.KIND, "shop", "web", "u-1", "7")


def test_event_arguments_are_checked_and_long_notes_cut():
    node = {"metadata": {"name": "node-1"}}
    with pytest.raises(ValueError, match="pass kind="):
        events.warning(node, "NotReady", "x")
    events.warning(node, "NotReady", "é" * 1000, kind=GroupVersionKind("", "v1", "Node"))
    event = testing.take_events()[0]
    assert event.regarding.namespace is None and event.regarding.kind.kind == "Node"
    assert len(event.note.encode()) <= events.MAX_NOTE_BYTES and event.note.endswith("…")
    with pytest.raises(ValueError, match="reason must be a non-empty string"):
        events.warning(WEB, "", "x")
    with pytest.raises(ValueError, match="more than 128"):
        events.warning(WEB, "R" * 129, "x")
    with pytest.raises(ValueError, match="type must be"):
        events.publish(WEB, "Error", "R", "x")


def test_scripted_publish_failures():
    testing.script_events(kube.TooManyRequests("event rate limit", retry_after_ms=1000), times=1)
    with pytest.raises(kube.TooManyRequests):
        events.warning(WEB, "R", "first")
    events.warning(WEB, "R", "second")
    assert [e.note for e in testing.take_events()] == ["first", "second"]


def test_reset_forgets_calls_scripts_events_and_enforcement():
    testing.script_kube("get", returns={})
    testing.enforce(Scaler)
    kube.Api(Deployment, namespace="shop").get("web")
    with pytest.raises(kube.NotGranted):
        events.warning(WEB, "R", "x")
    testing.reset()
    assert testing.take_kube_calls() == [] and testing.take_events() == []
    with pytest.raises(kube.NotFound):
        kube.Api(Deployment, namespace="elsewhere").get("web")
    assert testing.take_kube_calls()[0].kind == Deployment.KIND
