"""The controller, run against the SDK's stand-in host."""

import json

from herald_sdk import testing

from app import Plugin


def deployment(image):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "uid": "uid-web"},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "app", "image": image}]}}}}


def test_keeps_an_owned_summary_and_looks_again_later():
    testing.reset()
    testing.declare(Plugin)
    testing.cache_insert(deployment("nginx:1.28"))
    plugin = Plugin()
    # The notification may be older than the cache: the cache's state wins.
    plugin.on_add(testing.added(deployment("nginx:1.27")))
    [write] = testing.take_kube_calls()
    body = json.loads(write.body)
    assert (write.verb, write.name) == ("apply", "web-summary")
    assert body["metadata"]["ownerReferences"][0]["uid"] == "uid-web"
    assert body["data"] == {"images": "nginx:1.28", "replicas": "2"}
    assert testing.take_requeues() == [600.0]
    assert testing.take_messages() == ["summarized deployment=shop/web images=nginx:1.28 replicas=2"]

    testing.cache_remove(Plugin.controller().primary, "shop", "web")
    plugin.on_delete(testing.deleted(deployment("nginx:1.28")))
    assert testing.take_kube_calls() == []
    assert testing.take_messages() == ["gone deployment=shop/web"]
