"""The plugin's handlers, run against the SDK's stand-in host."""

from herald_sdk import testing

from app import Plugin


def pod(phase):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0", "namespace": "shop"},
            "status": {"phase": phase}}


def test_logs_adds_phase_changes_and_deletions():
    testing.reset()
    plugin = Plugin()
    plugin.on_add(testing.added(pod("Pending")))
    plugin.on_update(testing.updated(pod("Pending"), pod("Running")))
    plugin.on_update(testing.updated(pod("Running"), pod("Running")))
    plugin.on_delete(testing.deleted(pod("Running")))
    assert testing.take_messages() == [
        "added pod=shop/web-0 phase=Pending",
        "phase pod=shop/web-0 from=Pending to=Running",
        "deleted pod=shop/web-0",
    ]
