"""The manifest builder."""

import pytest

from herald_sdk import EVENTS, Delivery, GroupVersionKind, Limits, Manifest, Subscription, Verb, WriteRule
from herald_sdk.kinds import Deployment, Pod, ReplicaSet


def test_builder_fills_every_field():
    manifest = (
        Manifest("watcher", "0.3.0")
        .subscribe(Subscription.to(Pod).namespace("web").labels("app=web")
                   .fields("spec.nodeName=node-1").resync(seconds=30).coalesced())
        .subscribe_kind("example.com", "v1", "Widget")
        .limits(Limits().call_deadline(milliseconds=250).memory_bytes(1 << 24))
        .capability("net")
    )
    assert (manifest.name, manifest.version, manifest.capabilities) == ("watcher", "0.3.0", ["net"])
    pods = manifest.subscriptions[0]
    assert pods.kind == GroupVersionKind("", "v1", "Pod")
    assert pods.namespace_name == "web"
    assert pods.label_selector_text == "app=web"
    assert pods.field_selector_text == "spec.nodeName=node-1"
    assert pods.resync_period_ms == 30_000
    assert pods.delivery_mode is Delivery.COALESCED
    assert manifest.subscriptions[1] == Subscription.to(GroupVersionKind("example.com", "v1", "Widget"))
    assert manifest.requested_limits.call_deadline_ms == 250
    assert manifest.requested_limits.memory_bytes_max == 1 << 24
    assert manifest.problems() == []


def test_kinds_given_three_ways_are_equal():
    assert Subscription.to("", "v1", "Pod") == Subscription.to(Pod) == Subscription.to(Pod.KIND)
    assert Subscription.to(Deployment).kind == GroupVersionKind("apps", "v1", "Deployment")


def test_defaults_are_unscoped_every_event():
    subscription = Subscription.to(ReplicaSet)
    assert (subscription.namespace_name, subscription.label_selector_text,
            subscription.field_selector_text, subscription.resync_period_ms) == (None, None, None, None)
    assert subscription.delivery_mode is Delivery.EVERY_EVENT
    assert Manifest("a", "1").requested_limits == Limits()


def test_subscriptions_are_copied_not_mutated():
    base = Subscription.to(Pod)
    scoped = base.namespace("shop")
    assert base.namespace_name is None and scoped.namespace_name == "shop"


def test_wrong_arguments_say_so():
    with pytest.raises(TypeError, match="three strings"):
        Subscription.to("", "v1")
    with pytest.raises(TypeError, match="GroupVersionKind or a typed kind"):
        Subscription.to("Pod")
    with pytest.raises(TypeError, match="takes a Subscription"):
        Manifest("a", "1").subscribe(Pod)


def test_problems_name_what_the_host_refuses():
    manifest = Manifest("Label_Audit", "1").subscribe(Subscription.to(Pod).resync(milliseconds=500))
    assert manifest.problems() == [
        "name 'Label_Audit' must be lowercase letters, digits and '-'",
        "resync period of v1/Pod is 500 ms, under one second",
    ]
    assert Manifest("ok", "1").problems() == [
        "no subscription and no webhook: subscribe to at least one kind, or declare a webhook"]


def test_write_rules_and_capabilities():
    manifest = (Manifest("scaler", "1").subscribe(Subscription.to(Deployment))
                .write(WriteRule.to(Deployment).verbs(Verb.GET, "patch", "patch").namespaces("shop", "web"))
                .write(WriteRule.to("", "Namespace").verbs("apply").all_namespaces())
                .write(WriteRule.to(GroupVersionKind("apps", "v1", "Deployment")).verbs("update").status()
                       .namespaces("shop"))
                .capability(EVENTS).capability("events"))
    get_patch, namespaces, status = manifest.write_rules
    assert (get_patch.group, get_patch.kind, get_patch.verb_list, get_patch.namespace_list,
            get_patch.subresource_name) == ("apps", "Deployment", [Verb.GET, Verb.PATCH], ["shop", "web"], None)
    assert (namespaces.group, namespaces.kind, namespaces.namespace_list) == ("", "Namespace", ["*"])
    assert status.subresource_name == "status"
    assert manifest.capabilities == ["events"], "asking twice is asking once"
    assert manifest.problems() == []


def test_write_rules_are_copied_and_their_problems_reported():
    base = WriteRule.to(Pod)
    assert base.verbs("get").verb_list == [Verb.GET] and base.verb_list == []
    manifest = (Manifest("a", "1").subscribe(Subscription.to(Pod))
                .write(base).write(WriteRule.to(Pod).verbs("get").namespaces("x").subresource("scale")))
    assert manifest.problems() == [
        "write rule on core/Pod has no verbs",
        "write rule on core/Pod has no namespaces (use .namespaces(...) or .all_namespaces())",
        "write rule on core/Pod: subresource 'scale' is not 'status'",
    ]
    with pytest.raises(ValueError, match="unknown verb 'list': one of get, create, update, patch, apply, delete"):
        WriteRule.to(Pod).verbs("list")
    with pytest.raises(TypeError, match="two strings"):
        WriteRule.to("", 3)
    with pytest.raises(TypeError, match="takes a WriteRule"):
        Manifest("a", "1").write(Pod)
