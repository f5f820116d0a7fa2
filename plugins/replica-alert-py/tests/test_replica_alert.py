"""replica-alert against the SDK's stand-in host: the ConfigMap applied, the
Events, the counter, the webhook and the requeue, episode by episode."""

import pytest

from herald_sdk import HandlerError, HttpError, kube, testing
from herald_sdk.http import Response

from replica_alert import ALERTS, ReplicaAlert

HOOK = "https://hooks.example.com/replicas"


def deployment(available, desired=3, name="web"):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "shop", "uid": f"uid-{name}", "resourceVersion": "7"},
            "spec": {"replicas": desired}, "status": {"availableReplicas": available}}


@pytest.fixture
def plugin():
    testing.set_config({"webhookUrl": HOOK})
    testing.enforce(ReplicaAlert)      # kube calls and Events must match the manifest
    testing.declare(ReplicaAlert)      # metric updates checked as the host checks them
    testing.http.grant("https://hooks.example.com")
    testing.http.respond(HOOK, Response(202))
    return ReplicaAlert()


def test_the_manifest_asks_for_what_it_uses():
    manifest = ReplicaAlert.manifest()
    assert manifest.problems() == []
    assert manifest.capabilities == ["events", "http"]
    assert [(rule.kind, [verb.value for verb in rule.verb_list], rule.namespace_list)
            for rule in manifest.write_rules] == [("ConfigMap", ["apply"], ["*"])]
    assert manifest.subscriptions[0].delivery_mode.value == "coalesced"


def test_a_healthy_deployment_is_left_alone(plugin):
    plugin.on_add(testing.added(deployment(3)))
    assert testing.take_kube_calls() == [] and testing.take_events() == []
    assert testing.http.requests() == [] and testing.requeues() == [] and testing.metrics() == {}


def test_degraded_writes_records_counts_posts_and_requeues(plugin):
    plugin.on_add(testing.added(deployment(3)))
    plugin.on_update(testing.updated(deployment(3), deployment(1)))
    [apply] = testing.take_kube_calls()
    assert (apply.verb, apply.kind.kind, apply.key, apply.force) == ("apply", "ConfigMap", "shop/replica-alert-web", True)
    assert apply.object["data"] == {"deployment": "web", "state": "degraded", "desired": "3", "available": "1"}
    assert apply.object["metadata"]["ownerReferences"][0]["uid"] == "uid-web"
    [event] = testing.take_events()
    assert (event.type, event.reason, event.action, event.note) == (
        "Warning", "ReplicasUnavailable", "Alerted", "1 of 3 replicas available")
    assert (event.regarding.kind.kind, event.regarding.name, event.regarding.uid) == ("Deployment", "web", "uid-web")
    assert testing.metric(ALERTS, "shop") == 1
    [post] = testing.http.take_requests()
    assert (post.method, post.url, post.timeouts_ms) == ("POST", HOOK, (2000, 2000, 2000))
    assert post.json() == {"text": "shop/web: 1 of 3 replicas available", "deployment": "shop/web",
                           "state": "degraded", "desired": 3, "available": 1}
    assert testing.take_requeues() == [30]
    assert testing.take_messages() == ["degraded deployment=shop/web available=1 desired=3",
                                       "posted deployment=shop/web state=degraded status=202"]


def test_the_recheck_refreshes_the_configmap_only(plugin):
    plugin.on_update(testing.updated(deployment(3), deployment(1)))
    testing.take_kube_calls(), testing.take_events(), testing.http.take_requests(), testing.take_requeues()
    plugin.on_update(testing.resynced(deployment(2)))
    assert [call.object["data"]["available"] for call in testing.take_kube_calls()] == ["2"]
    assert testing.take_events() == [] and testing.http.requests() == []
    assert testing.metric(ALERTS, "shop") == 1 and testing.take_requeues() == [30]


def test_recovery_is_written_recorded_and_posted_once(plugin):
    plugin.on_update(testing.updated(deployment(3), deployment(1)))
    testing.take_kube_calls(), testing.take_events(), testing.http.take_requests(), testing.take_requeues()
    plugin.on_update(testing.updated(deployment(1), deployment(3)))
    plugin.on_update(testing.updated(deployment(3), deployment(3)))
    [apply] = testing.take_kube_calls()
    assert apply.object["data"]["state"] == "ok"
    [event] = testing.take_events()
    assert (event.type, event.reason, event.action) == ("Normal", "ReplicasAvailable", "Recovered")
    assert [post.json()["state"] for post in testing.http.take_requests()] == ["recovered"]
    assert testing.requeues() == [] and testing.metric(ALERTS, "shop") == 1


def test_a_failed_webhook_fails_the_call_and_the_retry_posts_once(plugin):
    testing.http.respond_once(HOOK, Response(503, "down"))
    testing.http.fail_once(HOOK, "timeout")
    with pytest.raises(HttpError) as failed:
        plugin.on_update(testing.updated(deployment(3), deployment(1)))
    assert str(failed.value) == f"POST {HOOK}: unexpected status 503: down" and failed.value.retryable
    with pytest.raises(HttpError, match="timed out"):
        plugin.on_update(testing.resynced(deployment(1)))       # the host's retry, with the newest state
    plugin.on_update(testing.resynced(deployment(1)))
    plugin.on_update(testing.resynced(deployment(1)))
    assert len(testing.http.take_requests()) == 3, "two failures, one success, then nothing"
    assert len(testing.take_events()) == 1 and testing.metric(ALERTS, "shop") == 1
    assert testing.take_requeues() == [30, 30], "requested only by the calls that succeeded"


def test_a_recovery_whose_webhook_fails_is_posted_by_the_retry(plugin):
    plugin.on_update(testing.updated(deployment(3), deployment(1)))
    testing.http.take_requests(), testing.take_events()
    testing.http.fail_once(HOOK, "connection")
    with pytest.raises(HttpError):
        plugin.on_update(testing.updated(deployment(1), deployment(3)))
    plugin.on_update(testing.resynced(deployment(3)))
    assert [post.json()["state"] for post in testing.http.take_requests()] == ["recovered", "recovered"]
    assert [event.reason for event in testing.take_events()] == ["ReplicasAvailable"]


def test_without_a_webhook_alerts_are_logged_recorded_and_counted(plugin):
    testing.clear_config()
    plugin.on_update(testing.updated(deployment(3), deployment(0)))
    assert testing.http.requests() == []
    assert len(testing.take_events()) == 1 and testing.metric(ALERTS, "shop") == 1


def test_too_little_time_left_defers_the_webhook_to_a_retry(plugin):
    testing.set_remaining_ms(50)
    with pytest.raises(HandlerError, match="no time left to post degraded for shop/web"):
        plugin.on_update(testing.updated(deployment(3), deployment(1)))
    assert testing.http.requests() == []
    testing.set_remaining_ms(900)
    plugin.on_update(testing.resynced(deployment(1)))
    assert len(testing.http.take_requests()) == 1


def test_a_deleted_deployment_is_forgotten(plugin):
    plugin.on_update(testing.updated(deployment(3), deployment(1)))
    plugin.on_delete(testing.deleted(deployment(1)))
    assert plugin.degraded == {} and plugin.recovering == {}


def test_a_refused_apply_fails_the_call(plugin):
    testing.script_kube("apply", raises=kube.Conflict("someone else owns data.state"), times=1)
    with pytest.raises(kube.Conflict):
        plugin.on_update(testing.updated(deployment(3), deployment(1)))
    assert testing.take_events() == [] and testing.http.requests() == []


def test_a_bad_configuration_fails_every_call(plugin):
    testing.set_config({"webhook": HOOK})
    with pytest.raises(HandlerError, match="the plugin configuration"):
        plugin.on_add(testing.added(deployment(1)))
