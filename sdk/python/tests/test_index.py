"""Look-ups by the indexes the manifest declares, served by the stand-in
host as the host files objects: by label, by field path, by owner UID."""

import pytest

from herald_sdk import Manifest, Subscription, UnknownIndex, cache, testing
from herald_sdk.cache import Index
from herald_sdk.kinds import KubeObject, Pod, ReplicaSet


def replica_set(namespace, name, app, owner=None, replicas=1):
    metadata = {"name": name, "namespace": namespace, "labels": {"app": app}}
    if owner:
        metadata["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": owner}]
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": metadata, "spec": {"replicas": replicas}}


MANIFEST = (Manifest("rollouts", "0.1.0").subscribe(Subscription.to(ReplicaSet))
            .index(Index.by_owner("owner", ReplicaSet))
            .index(Index.by_label("app", ReplicaSet, "app"))
            .index(Index.by_field("replicas", ReplicaSet, "spec.replicas")))


def test_look_ups_find_what_the_index_files():
    testing.cache_insert(replica_set("shop", "web-2", "web", "u-1", replicas=3))
    testing.cache_insert(replica_set("shop", "web-1", "web", "u-1"))
    testing.cache_insert(replica_set("blog", "web-3", "web", "u-2"))
    testing.cache_insert(replica_set("shop", "db-1", "db"))
    with pytest.raises(UnknownIndex, match="owner"):
        cache.by_index("owner", "u-1")
    testing.declare(MANIFEST)
    owned = cache.by_index("owner", "u-1", kind=ReplicaSet)
    assert [r.name for r in owned] == ["web-1", "web-2"] and all(isinstance(r, ReplicaSet) for r in owned)
    assert cache.by_index("owner", "u-2", namespace="shop") == []
    assert [r.key for r in cache.by_index("app", "web")] == ["blog/web-3", "shop/web-1", "shop/web-2"]
    assert type(cache.by_index("app", "db")[0]) is KubeObject
    assert [r.name for r in cache.by_index("replicas", "3")] == ["web-2"]
    assert len(cache.by_index_json("app", "web", "shop")) == 2
    with pytest.raises(UnknownIndex, match="nodes"):
        cache.by_index("nodes", "n")


def test_index_values_follow_the_host():
    pod = {"metadata": {"labels": {"app": "web"}, "ownerReferences": [{"uid": "a"}, {"uid": ""}, {"uid": "b"}]},
           "spec": {"nodeName": "n1", "priority": 7, "hostNetwork": True, "containers": []}}
    assert Index.by_owner("o", Pod).values(pod) == ["a", "b"]
    assert Index.by_label("l", Pod, "app").values(pod) == ["web"]
    assert Index.by_label("l", Pod, "tier").values(pod) == []
    assert Index.by_field("f", Pod, "spec.nodeName").values(pod) == ["n1"]
    assert Index.by_field("f", Pod, "spec.priority").values(pod) == ["7"]
    assert Index.by_field("f", Pod, "spec.hostNetwork").values(pod) == ["true"]
    assert Index.by_field("f", Pod, "spec.containers").values(pod) == []
    assert Index.by_field("f", Pod, "spec.missing.deeper").values(pod) == []
