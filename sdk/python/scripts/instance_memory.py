"""Memory per live instance of a Herald plugin component, the way B11
counts it (20 instances held at once, each having handled one 4 KB Pod)
and the way the kernel shares it: the growth of the process's RSS, PSS and
anonymous memory, divided by the instances.

    python3 -m venv /tmp/wt && /tmp/wt/bin/pip install wasmtime==50.0.1
    /tmp/wt/bin/python sdk/python/scripts/instance_memory.py plugin.wasm [more.wasm ...]

It runs the component with wasmtime's default configuration (copy-on-write
memory images, as the host), WASI p2 and wasi:http, and stand-ins for
Herald's imports: `log` and `config` answer, `deadline` says 1000 ms, the
others fail if called (a no-op plugin calls none). Per instance it prints
three figures, in MiB:

- RSS: every page the instance touched, the pages of the memory image it
  only read included. Those are the image's page-cache pages, mapped once per
  instance and so counted once per instance in RSS, but held in memory once
  for all of them.
- PSS: the same, shared pages divided among the instances mapping them.
- anonymous: the pages the instance wrote (copied on write, its own): what
  each further instance costs.
"""

import json
import sys

import wasmtime
from wasmtime import component as c

COUNT = 20


def memory() -> dict:
    """Rss, Pss and Anonymous of this process, in bytes."""
    values = {}
    with open("/proc/self/smaps_rollup") as rollup:
        for line in rollup:
            name, _, value = line.partition(":")
            if value.strip().endswith("kB"):
                values[name] = int(value.split()[0]) * 1024
    return {"rss": values["Rss"], "pss": values["Pss"], "anon": values["Anonymous"]}


def pod(index: int) -> str:
    """A Pod of 4 KB as JSON text."""
    containers = [{"name": f"c{i}", "image": f"registry.example.com/team/app-{i}:1.{i}.0",
                   "env": [{"name": f"VAR_{j}", "value": "x" * 20} for j in range(6)]} for i in range(4)]
    text = json.dumps({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": f"web-{index}", "namespace": "shop", "uid": f"uid-{index}",
                                    "resourceVersion": str(index), "labels": {"app": "web"}},
                       "spec": {"nodeName": "node-1", "containers": containers}, "status": {"phase": "Running"}})
    return text + " " * max(0, 4096 - len(text))


def context(index: int) -> c.Record:
    """The event-context of `pod(index)`."""
    kind = c.Record()
    kind.group, kind.version, kind.kind = "", "v1", "Pod"
    record = c.Record()
    for name, value in {"kind": kind, "resource": "pods", "key": f"shop/web-{index}",
                        "resource-version": str(index), "is-initial-list": False, "is-resync": False,
                        "final-state-unknown": False}.items():
        setattr(record, name, value)
    return record


def linker_for(engine: wasmtime.Engine) -> c.Linker:
    linker = c.Linker(engine)
    linker.add_wasip2()
    linker.add_wasi_http()

    def unused(*arguments):
        raise RuntimeError("a no-op plugin does not call this")

    with linker.root() as root:
        with root.add_instance("herald:plugin/log@0.2.0") as log:
            log.add_func("log", lambda store, level, message: None)
        with root.add_instance("herald:plugin/config@0.2.0") as config:
            config.add_func("get", lambda store: None)
        with root.add_instance("herald:plugin/deadline@0.4.0") as deadline:
            deadline.add_func("remaining-ms", lambda store: 1000)
        for interface, functions in [
            ("cache@0.2.0", ["get", "list"]),
            ("kube@0.2.0", ["get", "create", "replace", "patch", "apply", "delete"]),
            ("events@0.2.0", ["publish"]),
            ("metrics@0.3.0", ["add", "set", "observe"]),
            ("workqueue@0.3.0", ["requeue-after"]),
            ("index@0.3.0", ["lookup"]),
        ]:
            with root.add_instance(f"herald:plugin/{interface}") as instance:
                for function in functions:
                    instance.add_func(function, unused)
    return linker


def on_add(store, instance, index: int) -> None:
    handler = instance.get_export_index(store, "herald:plugin/handler@0.2.0")
    function = instance.get_func(store, instance.get_export_index(store, "on-add", handler))
    function(store, context(index), pod(index))
    function.post_return(store)


def measure(path: str) -> None:
    engine = wasmtime.Engine(wasmtime.Config())
    component = c.Component.from_file(engine, path)
    linker = linker_for(engine)
    base = memory()
    grown = lambda: {key: value - base[key] for key, value in memory().items()}
    held = []
    for _ in range(COUNT):
        store = wasmtime.Store(engine)
        store.set_wasi(wasmtime.WasiConfig())
        held.append((store, linker.instantiate(store, component)))
    instantiated = grown()
    for index, (store, instance) in enumerate(held):
        on_add(store, instance, index)
    first = grown()
    for index, (store, instance) in enumerate(held):
        for more in range(1, 11):
            on_add(store, instance, index + 100 * more)
    later = grown()
    show = lambda figures: "/".join(f"{figures[key] / COUNT / 2**20:.2f}" for key in ("rss", "pss", "anon"))
    print(f"{path}: MiB per instance (RSS/PSS/anonymous): instantiated {show(instantiated)}, "
          f"after 1 call {show(first)}, after 11 calls {show(later)}")


if __name__ == "__main__":
    for argument in sys.argv[1:]:
        measure(argument)
