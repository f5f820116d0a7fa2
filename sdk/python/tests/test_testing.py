"""The stand-in host's event builders, event-file reader and delivery."""

import json

from herald_sdk import Handler, HandlerError, Manifest, Subscription, testing
from herald_sdk.kinds import Node, Pod

POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "web-0", "namespace": "shop", "resourceVersion": "7"}}


def test_builders_set_context_from_metadata_and_flags():
    added = testing.added(POD)
    assert (added.kind, added.resource, added.key, added.resource_version) == (Pod.KIND, "pods", "shop/web-0", "7")
    assert not (added.is_initial_list or added.is_resync or added.final_state_unknown)
    assert testing.listed(POD).is_initial_list
    assert testing.resynced(POD).is_resync and testing.resynced(POD).old == testing.resynced(POD).new
    assert testing.vanished(POD).final_state_unknown
    node = testing.deleted({"metadata": {"name": "node-1"}}, kind=Node)
    assert (node.key, node.resource, node.namespace) == ("node-1", "nodes", None)
    newer = dict(POD, metadata=dict(POD["metadata"], resourceVersion="8"))
    update = testing.updated(POD, newer)
    assert update.resource_version == "8" and update.old.resource_version == "7"


def test_read_events_reads_the_replay_format(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(json.dumps(record) for record in [
        {"type": "add", "initial": True, "object": POD},
        {"type": "update", "old": POD, "object": POD, "resync": True},
        {"type": "delete", "finalStateUnknown": True, "object": POD},
        {"type": "MODIFIED", "object": POD},
    ]) + "\n\n")
    notifications = list(testing.read_events(str(path)))
    assert [kind for kind, _ in notifications] == ["add", "update", "delete", "update"]
    assert notifications[0][1].is_initial_list
    assert notifications[1][1].is_resync
    assert notifications[2][1].final_state_unknown
    assert notifications[3][1].old == POD


class Picky(Handler):
    @classmethod
    def manifest(cls):
        return Manifest("picky", "1").subscribe(Subscription.to(Pod))

    def on_add(self, event):
        raise HandlerError("refused " + event.key)

    def on_delete(self, event):
        return {}["missing"]


def test_deliver_returns_the_err_message_the_component_would():
    picky = Picky()
    assert testing.deliver(picky, ("add", testing.added(POD))) == "refused shop/web-0"
    assert testing.deliver(picky, ("delete", testing.deleted(POD))) == "KeyError: 'missing'"
    assert testing.deliver(picky, ("update", testing.resynced(POD))) is None
