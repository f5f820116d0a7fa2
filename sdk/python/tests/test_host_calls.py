"""Logging, configuration and cache look-ups against the stand-in host."""

import pytest

from herald_sdk import GroupVersionKind, HandlerError, InvalidSelector, NotSubscribed, cache, config, log, testing
from herald_sdk.kinds import KubeObject, Node, Pod


def pod(name, namespace="shop", **labels):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": labels}}


def test_log_levels_and_fields():
    log.info("added", key="shop/web-0", count=3)
    log.warn("odd value", reason="two words", empty="", quote='say "hi"')
    log.trace("t"); log.debug("d"); log.error("e")
    lines = testing.take_logs()
    assert [(str(line.level), line.message) for line in lines] == [
        ("info", "added key=shop/web-0 count=3"),
        ("warn", 'odd value reason="two words" empty="" quote="say \\"hi\\""'),
        ("trace", "t"), ("debug", "d"), ("error", "e"),
    ]
    assert testing.take_messages() == []


def test_config_is_parsed_json_or_none():
    assert config.get() is None and config.raw() is None
    testing.set_config({"required": ["app"]})
    assert config.get() == {"required": ["app"]}
    testing.set_config_json("{oops")
    with pytest.raises(HandlerError, match="decoding the plugin configuration"):
        config.get()
    testing.clear_config()
    assert config.get() is None


def test_cache_get_and_list_by_namespace_and_selector():
    testing.cache_insert(pod("web-0", app="web", tier="front"))
    testing.cache_insert(pod("db-0", app="db"))
    testing.cache_insert(pod("web-0", namespace="other", app="web"))
    found = cache.get(Pod, "shop", "web-0")
    assert isinstance(found, Pod) and found.labels == {"app": "web", "tier": "front"}
    assert cache.get(Pod, "shop", "web-9") is None
    assert [p.key for p in cache.list(Pod)] == ["other/web-0", "shop/db-0", "shop/web-0"]
    assert [p.key for p in cache.list(Pod, namespace="shop")] == ["shop/db-0", "shop/web-0"]
    assert [p.key for p in cache.list(Pod, label_selector="app=web,tier!=back")] == ["other/web-0", "shop/web-0"]
    assert [p.key for p in cache.list(Pod, label_selector="app in (db, cache)")] == ["shop/db-0"]
    assert [p.key for p in cache.list(Pod, label_selector="tier,!legacy")] == ["shop/web-0"]
    assert [p.key for p in cache.list(Pod, label_selector="app notin (web)")] == ["shop/db-0"]
    testing.cache_remove(Pod, "shop", "db-0")
    assert cache.get(Pod, "shop", "db-0") is None


def test_cluster_scoped_and_custom_kinds():
    testing.cache_insert({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}})
    assert isinstance(cache.get(Node, None, "node-1"), Node)
    widget = GroupVersionKind("example.com", "v1", "Widget")
    testing.cache_insert({"metadata": {"name": "w", "namespace": "a"}}, kind=widget)
    assert type(cache.get(widget, "a", "w")) is KubeObject
    assert cache.get_json(widget, "a", "w") == '{"metadata": {"name": "w", "namespace": "a"}}'


def test_cache_refuses_what_the_host_refuses():
    with pytest.raises(NotSubscribed, match="not subscribed to v1/Pod") as refused:
        cache.list(Pod)
    assert refused.value.kind == Pod.KIND
    testing.subscribe(Pod)
    assert cache.list(Pod) == []
    for selector in ("a=b=c", "a in x", "a in (x", "a)"):
        with pytest.raises(InvalidSelector):
            cache.list(Pod, label_selector=selector)
