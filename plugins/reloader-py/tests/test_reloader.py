"""reloader-py against the SDK's stand-in host: recorded first, rolled once
per data change, never for anything else; only followers reached."""

import base64
import json

from herald_sdk import testing

from reloader import (HASH_ANNOTATION, RELOAD_AUTO, RELOAD_CONFIG_MAPS, RELOAD_SECRETS, Reloader,
                      data_hash, followers_of)
from herald_sdk.kinds import ConfigMap, Secret


def config_map(name, value, **metadata):
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "shop", **metadata}, "data": {"value": value}}


def secret(name, value):
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "shop"},
            "data": {"password": base64.b64encode(value.encode()).decode()}}


def deployment(name, annotations=None, pod_spec=None):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "shop", "annotations": annotations or {}},
            "spec": {"template": {"spec": pod_spec or {}}}}


def applied():
    """The one apply made: the Deployment's hash and the pod template's."""
    [call] = testing.take_kube_calls()
    assert (call.verb, call.namespace, call.name, call.force) == ("apply", "shop", "web", True)
    body = json.loads(call.body)
    template = body.get("spec", {}).get("template", {}).get("metadata", {}).get("annotations", {})
    return body["metadata"]["annotations"][HASH_ANNOTATION], template.get(HASH_ANNOTATION)


def store(obj, digest, template=None):
    obj["metadata"]["annotations"][HASH_ANNOTATION] = digest
    if template:
        obj["spec"]["template"]["metadata"] = {"annotations": {HASH_ANNOTATION: template}}


def reconciled(plugin, obj):
    testing.cache_insert(obj)
    plugin.on_add(testing.added(obj))


def outcome(name):
    return testing.metric("reconciles_total", name) or 0


def test_a_following_deployment_is_recorded_first_then_rolled_once_per_data_change():
    testing.declare(Reloader)
    plugin = Reloader()
    testing.cache_insert(config_map("settings", "blue"))
    web = deployment("web", {RELOAD_CONFIG_MAPS: "settings"})
    reconciled(plugin, web)
    first, template = applied()
    assert first and template is None, "first sight records the hash without a rollout"
    store(web, first)
    reconciled(plugin, web)  # its own write coming back
    assert testing.take_kube_calls() == []

    relabelled = config_map("settings", "blue", labels={"team": "shop"})
    testing.cache_insert(relabelled)
    plugin.on_update(testing.updated(config_map("settings", "blue"), relabelled))
    assert testing.take_kube_calls() == [], "a change that left the data alone rolled the Deployment"

    testing.cache_insert(config_map("settings", "green"))
    plugin.on_update(testing.updated(relabelled, config_map("settings", "green")))
    second, template = applied()
    assert second != first and template == second
    assert [outcome(o) for o in ("recorded", "unchanged", "rolled")] == [1, 2, 1]
    assert [m.split(" deployment=")[0] for m in testing.take_messages()] == [
        "following", "rolled for changed data"]


def test_a_change_reaches_only_the_deployments_that_follow_it():
    testing.declare(Reloader)
    auto = deployment("auto", {RELOAD_AUTO: "true"}, {
        "volumes": [{"name": "v", "projected": {"sources": [{"secret": {"name": "db"}}]}}],
        "containers": [{"name": "app", "envFrom": [{"configMapRef": {"name": "settings"}}]}],
    })
    for obj in (auto, deployment("listed", {RELOAD_CONFIG_MAPS: " other , settings"}),
                deployment("secrets-only", {RELOAD_SECRETS: "db"}),
                deployment("mounts-but-not-opted-in")):
        testing.cache_insert(obj)
    for obj, kind, want in ((ConfigMap(config_map("settings", "x")), "ConfigMap", ["auto", "listed"]),
                            (Secret(secret("db", "s3cret")), "Secret", ["auto", "secrets-only"]),
                            (ConfigMap(config_map("unused", "y")), "ConfigMap", [])):
        assert sorted(r.name for r in followers_of(kind)(obj)) == want, obj.name


def test_a_followed_object_not_yet_created_is_waited_for_without_a_write():
    testing.declare(Reloader)
    plugin = Reloader()
    testing.cache_insert(secret("db", "one"))
    reconciled(plugin, deployment("web", {RELOAD_SECRETS: "db", RELOAD_CONFIG_MAPS: "later"}))
    assert testing.take_kube_calls() == []
    assert outcome("waiting") == 1
    later = config_map("later", "v")
    testing.cache_insert(later)
    plugin.on_add(testing.added(later))
    digest, template = applied()
    assert digest and template is None


def test_recording_keeps_a_pod_template_hash_already_there():
    testing.declare(Reloader)
    testing.cache_insert(secret("db", "one"))
    web = deployment("web", {RELOAD_SECRETS: "db"})
    web["spec"]["template"]["metadata"] = {"annotations": {HASH_ANNOTATION: "from-an-earlier-rollout"}}
    reconciled(Reloader(), web)
    assert applied()[1] == "from-an-earlier-rollout"


def test_the_hash_is_the_go_ports():
    """The same data hashes as plugins/go-reloader hashes it (the value its
    main_test.go prints for this data), so either port may take over from
    the other without rolling anything."""
    testing.subscribe(ConfigMap)
    testing.subscribe(Secret)
    testing.cache_insert(config_map("settings", "blue"))
    testing.cache_insert(secret("db", "s3cret"))
    digest, missing = data_hash("shop", [("ConfigMap", "settings"), ("Secret", "db")])
    assert missing is None
    assert digest == GO_HASH


#: go-reloader's hash of ConfigMap shop/settings {value: blue} and Secret
#: shop/db {password: s3cret}, pinned by its TestTheHashIsStable too.
GO_HASH = "ca90df4e6126004c809c6ffa27665f9b869f4180c2c78789ff3a5a5e538d9165"
