"""{{name}}: a Herald plugin that logs Pods being added, changing phase and being deleted."""

import herald_sdk
from herald_sdk import Event, Handler, Manifest, Subscription, Update, log
from herald_sdk.kinds import Pod


def phase(pod) -> str:
    """A Pod's ``status.phase``, or ``none`` before the API server sets one."""
    return (pod.get("status") or {}).get("phase") or "none"


class Plugin(Handler):
    """Logs the life of every Pod."""

    @classmethod
    def manifest(cls) -> Manifest:
        return Manifest("{{name}}", "0.1.0").subscribe(Subscription.to(Pod))

    def on_add(self, event: Event) -> None:
        verb = "listed" if event.is_initial_list else "added"
        log.info(f"{verb} pod={event.key} phase={phase(event.object)}")

    def on_update(self, event: Update) -> None:
        old, new = phase(event.old), phase(event.new)
        if old != new:
            log.info(f"phase pod={event.key} from={old} to={new}")

    def on_delete(self, event: Event) -> None:
        log.info(f"deleted pod={event.key}")


herald_sdk.export_plugin(Plugin)
