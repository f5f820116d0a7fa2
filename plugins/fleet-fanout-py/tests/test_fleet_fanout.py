"""fleet-fanout-py against the SDK's stand-in host, with three clusters."""

from herald_sdk import kube, testing
from herald_sdk.kinds import ConfigMap

import fleet_fanout
from fleet_fanout import FANNED_FROM, FAN_OUT, FleetFanout


def settings(labels):
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": "shop", "labels": labels},
            "data": {"color": "blue"}}


def test_a_config_map_is_applied_in_every_other_cluster_labelled_with_its_origin():
    testing.set_clusters(["east", "west", "north"])
    testing.set_cluster("west")
    FleetFanout().on_add(testing.added(settings({FAN_OUT: "true", "app": "shop"})))
    calls = testing.take_kube_calls()
    assert [(call.verb, call.cluster) for call in calls] == [("apply", "east"), ("apply", "north")]
    for call in calls:
        assert call.object["metadata"]["labels"] == {"app": "shop", FANNED_FROM: "west"}
        assert call.object["data"] == {"color": "blue"}
    assert testing.take_messages() == ["copied shop/settings from west to east",
                                       "copied shop/settings from west to north"]


def test_one_cluster_refusing_does_not_keep_the_copy_from_the_others():
    testing.set_clusters(["east", "west", "north"])
    testing.set_cluster("west")
    testing.script_kube("apply", ConfigMap, "settings", namespace="shop",
                        raises=kube.NotGranted("no write grant in east"), times=1)
    try:
        FleetFanout().on_add(testing.added(settings({FAN_OUT: "true"})))
    except Exception as error:  # the call fails, so the host retries it
        assert "east: " in str(error) and "no write grant in east" in str(error)
    else:
        raise AssertionError("a refused copy fails the call")
    assert [call.cluster for call in testing.take_kube_calls()] == ["east", "north"]


def test_a_delete_removes_only_the_copies_that_came_from_that_cluster():
    testing.set_clusters(["east", "west"])
    testing.set_cluster("west")
    testing.script_kube("get", ConfigMap, "settings", namespace="shop",
                        returns=settings({FANNED_FROM: "west"}), times=1)
    FleetFanout().on_delete(testing.deleted(settings({FAN_OUT: "true"})))
    assert [(c.verb, c.cluster) for c in testing.take_kube_calls()] == [("get", "east"), ("delete", "east")]
    testing.script_kube("get", ConfigMap, "settings", namespace="shop", returns=settings({}), times=1)
    FleetFanout().on_delete(testing.deleted(settings({FAN_OUT: "true"})))
    assert [c.verb for c in testing.take_kube_calls()] == ["get"]


def test_the_copy_leaves_the_fan_out_label_behind():
    copy = fleet_fanout.copy_of(ConfigMap(settings({FAN_OUT: "true", "tier": "a"})), "east")
    assert copy["metadata"]["labels"] == {"tier": "a", FANNED_FROM: "east"}
