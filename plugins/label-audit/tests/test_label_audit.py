"""label-audit's handlers, run against the SDK's stand-in host."""

from pathlib import Path

import pytest

from herald_sdk import GroupVersionKind, HandlerError, kube, testing
from herald_sdk.events import ObjectReference
from herald_sdk.kinds import Deployment, Pod
from label_audit import LabelAudit

EVENTS = Path(__file__).resolve().parents[3] / "examples" / "events" / "label-audit.jsonl"


def pod(name, namespace="shop", **labels):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": labels}}


def test_manifest_follows_the_configuration():
    default = LabelAudit.manifest()
    assert default.name == "label-audit"
    assert [s.kind for s in default.subscriptions] == [Pod.KIND, Deployment.KIND]
    testing.set_config({"required": ["owner"], "kinds": ["batch/v1/Job"], "namespace": "ci"})
    scoped = LabelAudit.manifest()
    assert [(s.kind, s.namespace_name) for s in scoped.subscriptions] == [
        (GroupVersionKind("batch", "v1", "Job"), "ci")]
    assert scoped.problems() == []
    assert default.capabilities == [] and scoped.capabilities == [] and default.write_rules == []


def test_warn_events_asks_for_the_events_capability_and_nothing_else():
    testing.set_config({"warnEvents": True})
    manifest = LabelAudit.manifest()
    assert manifest.capabilities == ["events"]
    assert manifest.write_rules == []


@pytest.mark.parametrize("config, complaint", [
    ({"required": []}, "required: expected a non-empty list"),
    ({"kinds": ["Pod"]}, "'Pod' is not apiVersion/Kind"),
    ({"requird": ["app"]}, "unknown configuration keys: requird"),
    (["app"], "must be a map, got list"),
    ({"warnEvents": "yes"}, "warnEvents: expected true or false"),
])
def test_bad_configuration_is_refused_with_the_reason(config, complaint):
    testing.set_config(config)
    with pytest.raises(ValueError, match=complaint):
        LabelAudit.manifest()


def test_warns_once_per_state_and_notes_fixes():
    testing.set_config({"required": ["app", "team"]})
    audit = LabelAudit()
    audit.on_add(testing.added(pod("web-0", app="web")))
    audit.on_update(testing.resynced(pod("web-0", app="web")))
    audit.on_update(testing.updated(pod("web-0", app="web"), pod("web-0", app="web", team="")))
    audit.on_update(testing.updated(pod("web-0"), pod("web-0")))
    audit.on_update(testing.updated(pod("web-0"), pod("web-0", app="web", team="shop")))
    lines = testing.take_logs()
    assert [(str(line.level), line.message) for line in lines] == [
        ("warn", "missing required labels kind=Pod key=shop/web-0 missing=team"),
        ("warn", "missing required labels kind=Pod key=shop/web-0 missing=app,team"),
        ("info", "required labels now present kind=Pod key=shop/web-0"),
    ]


def test_compliant_objects_and_their_deletion_are_quiet():
    audit = LabelAudit()
    audit.on_add(testing.added(pod("ok", app="a", team="b")))
    audit.on_delete(testing.deleted(pod("ok", app="a", team="b")))
    assert testing.take_messages() == []


def test_deleting_an_offending_object_says_so():
    audit = LabelAudit()
    audit.on_add(testing.added(pod("bad")))
    audit.on_delete(testing.vanished(pod("bad")))
    assert testing.take_messages()[-1] == "deleted while missing labels kind=Pod key=shop/bad missing=app,team"


def test_summary_after_the_initial_list():
    audit = LabelAudit()
    audit.on_add(testing.listed(pod("a", app="x", team="y")))
    audit.on_add(testing.listed(pod("b")))
    testing.take_messages()
    audit.on_add(testing.added(pod("c", app="x", team="y")))
    audit.on_add(testing.added(pod("d", app="x", team="y")))
    assert testing.take_messages() == ["initial list audited objects=2 missing=1"]


def test_a_handler_with_a_broken_configuration_fails_every_call():
    testing.set_config_json("{not json")
    with pytest.raises(HandlerError, match="decoding the plugin configuration"):
        LabelAudit()


def test_the_recorded_events_replay_natively_as_the_host_replays_them():
    testing.set_config({"required": ["app", "team"], "kinds": ["v1/Pod", "apps/v1/Deployment"]})
    audit = LabelAudit()
    subscribed = {s.kind for s in LabelAudit.manifest().subscriptions}
    results = [testing.deliver(audit, (kind, event))
               for kind, event in testing.read_events(str(EVENTS)) if event.kind in subscribed]
    assert results == [None] * 9
    assert testing.take_messages() == [
        "missing required labels kind=Pod key=shop/web-1 missing=team",
        "missing required labels kind=Deployment key=shop/checkout missing=app,team",
        "initial list audited objects=3 missing=2",
        "required labels now present kind=Pod key=shop/web-1",
        "missing required labels kind=Deployment key=shop/checkout missing=team",
        "missing required labels kind=Pod key=payments/debug-shell missing=team",
        "deleted while missing labels kind=Pod key=payments/debug-shell missing=team",
    ]


def test_without_warn_events_no_event_is_recorded():
    testing.enforce(LabelAudit)
    audit = LabelAudit()
    audit.on_add(testing.added(pod("bad")))
    assert testing.take_events() == []


def test_warn_events_records_one_warning_per_new_finding():
    testing.set_config({"required": ["app", "team"], "warnEvents": True})
    testing.enforce(LabelAudit)
    audit = LabelAudit()
    bad = pod("web-0", app="web")
    bad["metadata"]["uid"] = "u-1"
    audit.on_add(testing.added(bad))
    audit.on_update(testing.resynced(bad))
    audit.on_update(testing.updated(bad, pod("web-0")))
    audit.on_update(testing.updated(pod("web-0"), pod("web-0", app="web", team="shop")))
    recorded = testing.take_events()
    assert [(e.type, e.reason, e.action, e.note) for e in recorded] == [
        ("Warning", "MissingRequiredLabels", "MissingRequiredLabels", "missing required labels: team"),
        ("Warning", "MissingRequiredLabels", "MissingRequiredLabels", "missing required labels: app, team"),
    ]
    assert recorded[0].regarding == ObjectReference(Pod.KIND, "shop", "web-0", "u-1", None)
    assert testing.take_kube_calls() == []


def test_an_event_the_host_refuses_is_logged_and_the_call_still_succeeds():
    testing.set_config({"warnEvents": True})
    testing.script_events(kube.TooManyRequests("event rate limit", retry_after_ms=1000), times=1)
    audit = LabelAudit()
    assert testing.deliver(audit, ("add", testing.added(pod("bad")))) is None
    assert [(str(line.level), line.message) for line in testing.take_logs()] == [
        ("warn", "missing required labels kind=Pod key=shop/bad missing=app,team"),
        ("error", 'could not record the event kind=Pod key=shop/bad error="TooManyRequests: event rate limit"'),
    ]
    audit.on_add(testing.added(pod("worse")))
    assert [e.regarding.name for e in testing.take_events()] == ["bad", "worse"]
