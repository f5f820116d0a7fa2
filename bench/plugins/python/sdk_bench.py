"""sdk-bench (Python): B11's plugin. Subscribes to Pods; with no
configuration it does nothing with them (the no-op handler), with
``{"mode": "parse"}`` it parses each added object and reads its name (the
parse handler), with ``{"mode": "view"}`` it reads the name from the
metadata alone (``event.metadata``, the rest left undecoded). One component serves both, so a run builds and compiles it
once; the handler is picked when the instance is created, not per call.
"""

import herald_sdk
from herald_sdk import Handler, Manifest, Subscription, config
from herald_sdk.kinds import Pod


class SdkBench(Handler):
    """No-op or parse-the-object, as configured."""

    @classmethod
    def manifest(cls):
        return Manifest("sdk-bench-python", "0.1.0").subscribe(Subscription.to(Pod))

    def __init__(self):
        self.names = 0
        settings = config.get() or {}
        if settings.get("mode") == "parse":
            self.on_add = self.parse_add
        elif settings.get("mode") == "view":
            self.on_add = self.view_add

    def parse_add(self, event):
        self.names += len(event.object.name)

    def view_add(self, event):
        self.names += len(event.metadata["name"])


herald_sdk.export_plugin(SdkBench)
