"""The ``cluster`` interface (world 0.6.0) in the stand-in host: the call's
cluster, the plugin's clusters, and a block run against another of them."""

import pytest

from herald_sdk import HandlerError, cluster, kube, testing
from herald_sdk.kinds import ConfigMap


@pytest.fixture(autouse=True)
def fresh_host():
    testing.reset()
    yield
    testing.reset()


def test_the_stand_in_host_runs_on_the_default_cluster_unless_told_otherwise():
    assert cluster.current() == "default"
    assert cluster.names() == ["default"]
    testing.set_clusters(["west", "east"])
    assert cluster.names() == ["east", "west"]
    assert cluster.current() == "west"


def test_a_block_runs_against_another_cluster_and_the_call_goes_back_after_it():
    testing.set_clusters(["east", "west"])
    testing.set_cluster("east")
    with cluster.within("west"):
        assert cluster.current() == "west"
        with pytest.raises(kube.NotFound):
            kube.Api(ConfigMap, namespace="shop").get("settings")
    assert cluster.current() == "east"
    assert [call.cluster for call in testing.take_kube_calls()] == ["west"]
    with pytest.raises(RuntimeError):
        with cluster.within("west"):
            raise RuntimeError("the block failed")
    assert cluster.current() == "east", "back even when the block raises"


def test_a_cluster_the_plugin_does_not_run_on_is_refused_before_the_block():
    testing.set_clusters(["east", "west"])
    ran = []
    with pytest.raises(HandlerError, match="east, west"):
        with cluster.within("north"):
            ran.append(True)
    assert ran == []
    assert cluster.current() == "east"
