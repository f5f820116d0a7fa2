"""The admission API: webhooks in the manifest, reviews, verdicts and
mutations, the handler's defaults, and the stand-in host's review builders.
(The conversions to and from the component's records are in test_export.py.)"""

import pytest

from herald_sdk import Handler, HandlerError, Manifest, Subscription, testing
from herald_sdk.admission import (AdmissionReview, AdmissionRule, FailurePolicy, Mutation, Operation, UserInfo,
                                  Verdict, Webhook)
from herald_sdk.kinds import ConfigMap, Deployment, GroupVersionKind, KubeObject, Pod


def pod(*images, name="web-0", init=()):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "shop"},
            "spec": {"initContainers": [{"name": f"init-{n}", "image": image} for n, image in enumerate(init)],
                     "containers": [{"name": f"app-{n}", "image": image} for n, image in enumerate(images)]}}


class NoLatest(Handler):
    """Validates Pods: refuses ``:latest`` (422 when it is an init
    container's), warns about images without a registry."""

    @classmethod
    def manifest(cls):
        return Manifest("no-latest", "0.1.0").validating(Webhook().rule(AdmissionRule.to(Pod).create().update()))

    def validate(self, review):
        images = review.object.images
        latest = [image for image in images if image.endswith(":latest")]
        if latest:
            in_init = any(container["image"].endswith(":latest") for container in review.object.init_containers)
            return Verdict.deny(f"not latest: {', '.join(latest)}", code=422 if in_init else None)
        verdict = Verdict.allow()
        for image in images:
            if "/" not in image:
                verdict = verdict.warn(f"{image} has no registry")
        return verdict


class Labeller(Handler):
    """Mutates Pods: labels them by JSON Patch, or returns the changed
    object when they have labels already; refuses ones named ``bad``."""

    @classmethod
    def manifest(cls):
        return Manifest("labeller", "0.1.0").mutating(
            Webhook().rule(AdmissionRule.to(Pod).create()).failure_policy(FailurePolicy.IGNORE).timeout_seconds(5))

    def mutate(self, review):
        obj = review.object
        if obj.name == "bad":
            return Mutation.deny("bad name", code=400)
        if not obj.labels:
            return Mutation.patch([{"op": "add", "path": "/metadata/labels", "value": {"team": "web"}}])
        changed = dict(obj)
        changed["metadata"] = {**obj.metadata, "labels": {**obj.labels, "team": "web"}}
        return Mutation.object(changed).warn("labelled")


def test_the_manifest_declares_webhooks_and_may_subscribe_to_nothing():
    manifest = Labeller.manifest().validating(
        Webhook().rule(AdmissionRule.to(Deployment).update().subresource("scale"))
        .in_namespaces("shop", "web").objects_labelled("app=web"))
    mutating, validating = manifest.mutating_webhook, manifest.validating_webhook
    assert (mutating.failure_policy_mode, mutating.timeout_seconds_limit) == (FailurePolicy.IGNORE, 5)
    assert mutating.rules == [AdmissionRule.to(Pod).create()]
    assert validating.namespace_selector == "kubernetes.io/metadata.name in (shop,web)"
    assert validating.object_selector == "app=web"
    rule = validating.rules[0]
    assert (rule.kind, rule.operation_list, rule.subresource_name) == (Deployment.KIND, [Operation.UPDATE], "scale")
    assert (validating.failure_policy_mode, validating.timeout_seconds_limit) == (FailurePolicy.FAIL, None)
    assert manifest.subscriptions == [] and manifest.problems() == []
    assert Manifest("ok", "1").validating_webhook is None and Manifest("ok", "1").mutating_webhook is None


def test_rules_and_webhooks_are_copied_and_operations_named_any_way():
    base = AdmissionRule.to("example.com", "v1", "Widget")
    both = base.operation("create", Operation.UPDATE, "CREATE").delete().connect()
    assert base.operation_list == []
    assert both.operation_list == [Operation.CREATE, Operation.UPDATE, Operation.DELETE, Operation.CONNECT]
    assert both.kind == GroupVersionKind("example.com", "v1", "Widget")
    empty = Webhook()
    assert empty.rule(both).rules == [both] and empty.rules == []
    with pytest.raises(ValueError, match="unknown operation 'patch': one of CREATE, UPDATE, DELETE, CONNECT"):
        base.operation("patch")
    with pytest.raises(TypeError, match="takes an AdmissionRule"):
        empty.rule(Pod)
    with pytest.raises(TypeError, match="takes a FailurePolicy"):
        empty.failure_policy("ignore")
    with pytest.raises(TypeError, match="takes a herald_sdk.admission.Webhook"):
        Manifest("a", "1").validating(both)


def test_problems_name_the_webhooks_the_host_refuses():
    manifest = (Manifest("a", "1")
                .validating(Webhook())
                .mutating(Webhook().rule(AdmissionRule.to(Pod).create()).rule(AdmissionRule.to(Pod))
                          .timeout_seconds(31)))
    assert manifest.problems() == [
        "admission.validating.rules is empty: a webhook admits at least one kind",
        "admission.mutating.rules[1].operations is empty: name at least one",
        "admission.mutating.timeoutSeconds must be 1 to 30 (Kubernetes' bounds)",
    ]


def test_a_review_exposes_every_field_and_parses_objects_once():
    review = testing.updating(pod("web:1"), pod("web:2"))
    assert (review.uid, review.kind, review.resource, review.subresource, review.name, review.namespace,
            review.key) == ("00000000-0000-0000-0000-000000000001", Pod.KIND, "pods", "", "web-0", "shop",
                            "shop/web-0")
    assert review.operation is Operation.UPDATE
    assert review.user_info == UserInfo(username="admin")
    assert (review.dry_run, review.options_json, review.options) == (False, None, None)
    assert isinstance(review.object, Pod) and review.object.images == ["web:2"]
    assert review.old_object.images == ["web:1"]
    assert review.object is review.object, "parsed once"
    assert isinstance(review.object_as(KubeObject), KubeObject)

    created = testing.creating({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    assert (created.operation, created.kind, created.resource, created.namespace) == (
        Operation.CREATE, ConfigMap.KIND, "configmaps", "")
    with pytest.raises(HandlerError, match="the review carries no oldObject"):
        created.old_object
    deleted = testing.deleting(pod("web:1"))
    assert deleted.operation is Operation.DELETE and deleted.object_json is None
    assert deleted.old_object.name == "web-0"
    with pytest.raises(HandlerError, match="the review carries no object"):
        deleted.object


def test_a_review_built_by_hand_carries_options_user_and_dry_run():
    review = AdmissionReview(
        uid="u-1", kind=Pod.KIND, resource="pods", subresource="status", name="p", namespace="n",
        operation=Operation.UPDATE,
        user_info=UserInfo("alice", "42", ["dev"], {"scopes": ["read", "write"]}),
        object_json='{"metadata": {"name": "p"}}', old_object_json="[1]", dry_run=True,
        options_json='{"kind": "UpdateOptions", "fieldManager": "kubectl"}')
    assert review.options == {"kind": "UpdateOptions", "fieldManager": "kubectl"}
    assert review.user_info.extra == {"scopes": ["read", "write"]} and review.user_info.groups == ["dev"]
    assert (review.subresource, review.dry_run) == ("status", True)
    assert review.object.name == "p"
    with pytest.raises(HandlerError, match="decoding the review's oldObject: expected a JSON object, got list"):
        review.old_object


def test_validate_allows_denies_with_a_code_and_warns():
    plugin = NoLatest()
    assert plugin.validate(testing.creating(pod("registry.example.com/web:1"))) == Verdict.allow()
    warned = plugin.validate(testing.creating(pod("web:1", "registry.example.com/db:2")))
    assert (warned.allowed, warned.warnings) == (True, ["web:1 has no registry"])
    denied = plugin.validate(testing.updating(pod("web:1"), pod("web:latest", "db:latest")))
    assert denied == Verdict(allowed=False, message="not latest: web:latest, db:latest", code=None, warnings=[])
    init = plugin.validate(testing.creating(pod("web:1", init=["tools:latest"])))
    assert (init.allowed, init.code, init.message) == (False, 422, "not latest: tools:latest")


def test_verdicts_and_mutations_are_values():
    allow = Verdict.allow()
    warned = allow.warn("first").warn("second")
    assert allow.warnings == [] and warned.warnings == ["first", "second"]
    assert Verdict.deny("no", code=409) == Verdict(allowed=False, message="no", code=409)
    with pytest.raises(ValueError, match="400 to 599, got 200"):
        Verdict.deny("no", code=200)
    assert Mutation.none() == Mutation(Verdict.allow())
    assert Mutation.deny("no").verdict == Verdict.deny("no")
    with pytest.raises(TypeError, match="a JSON Patch is a list of operations"):
        Mutation.patch({"op": "add"})
    with pytest.raises(TypeError, match="the changed object is a dict"):
        Mutation.object("{}")


def test_mutate_patches_changes_the_object_or_refuses():
    plugin = Labeller()
    patched = plugin.mutate(testing.creating(pod("web:1")))
    assert patched == Mutation(Verdict.allow(),
                               json_patch=[{"op": "add", "path": "/metadata/labels", "value": {"team": "web"}}])
    labelled = pod("web:1")
    labelled["metadata"]["labels"] = {"app": "web"}
    changed = plugin.mutate(testing.creating(labelled))
    assert changed.json_patch is None and changed.verdict.warnings == ["labelled"]
    assert changed.changed_object["metadata"]["labels"] == {"app": "web", "team": "web"}
    assert changed.changed_object["spec"] == labelled["spec"]
    refused = plugin.mutate(testing.creating(pod("web:1", name="bad")))
    assert (refused.verdict.allowed, refused.verdict.code, refused.json_patch, refused.changed_object) == (
        False, 400, None, None)


def test_a_plugin_that_does_not_admit_says_so():
    class Watcher(Handler):
        @classmethod
        def manifest(cls):
            return Manifest("watcher", "1").subscribe(Subscription.to(Pod))

    review = testing.creating(pod("web:1"))
    with pytest.raises(HandlerError, match=r"^the plugin does not admit: Watcher defines no validate\(\)$"):
        Watcher().validate(review)
    with pytest.raises(HandlerError, match=r"^the plugin does not admit: Watcher defines no mutate\(\)$"):
        Watcher().mutate(review)
    assert Watcher.manifest().validating_webhook is None
