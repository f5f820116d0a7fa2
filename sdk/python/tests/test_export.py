"""The component's exports, run natively against the bindings componentize-py
generates for the vendored WIT (``componentize-py bindings``), so the records
built here are the ones the component builds."""

import importlib
import subprocess
import sys

import pytest

import herald_sdk
from herald_sdk import Handler, HandlerError, Limits, Manifest, Subscription, log, testing
from herald_sdk import handler as handler_module
from herald_sdk._export import (Dispatcher, context_from_wit, logged_manifest, manifest_to_wit,
                                require_exported_plugin)
from herald_sdk.build import WIT_DIR, WORLD
from herald_sdk.kinds import Pod


@pytest.fixture(scope="module")
def bindings(tmp_path_factory):
    """The generated modules ``types`` and ``componentize_py_types``."""
    target = tmp_path_factory.mktemp("bindings") / "out"
    launcher = "import sys; from componentize_py import script; sys.argv[0]='componentize-py'; sys.exit(script())"
    subprocess.run([sys.executable, "-c", launcher, "--wit-path", str(WIT_DIR), "--world", WORLD,
                    "bindings", str(target)], check=True, capture_output=True)
    sys.path.insert(0, str(target))
    try:
        yield (importlib.import_module("wit_world.imports.types"),
               importlib.import_module("componentize_py_types"))
    finally:
        sys.path.remove(str(target))
        for name in [name for name in sys.modules if name.startswith(("wit_world", "componentize_py_types"))]:
            del sys.modules[name]


@pytest.fixture
def no_export():
    """Clears the exported class before and after the test."""
    handler_module._exported = None
    yield
    handler_module._exported = None


def test_manifest_becomes_the_generated_record(bindings):
    types, _ = bindings
    manifest = (Manifest("watcher", "1.0.0")
                .subscribe(Subscription.to(Pod).namespace("web").label_selector("app=web")
                           .field_selector("spec.nodeName=n").resync(seconds=1.5).coalesced())
                .subscribe_kind("example.com", "v1", "Widget")
                .limits(Limits().call_deadline(seconds=2).memory_bytes(4096))
                .capability("net"))
    expected = types.Manifest(
        name="watcher", version="1.0.0",
        subscriptions=[
            types.Subscription(types.GroupVersionKind("", "v1", "Pod"), "web", "app=web", "spec.nodeName=n",
                               1500, types.DeliveryMode.COALESCED),
            types.Subscription(types.GroupVersionKind("example.com", "v1", "Widget"), None, None, None,
                               None, types.DeliveryMode.EVERY_EVENT),
        ],
        limits=types.Limits(call_deadline_ms=2000, memory_bytes=4096),
        capabilities=["net"], writes=[])
    assert manifest_to_wit(manifest, types) == expected
    with pytest.raises(TypeError, match="must return a herald_sdk.Manifest"):
        manifest_to_wit({"name": "x"}, types)


def test_context_comes_from_the_generated_record(bindings):
    types, _ = bindings
    ctx = types.EventContext(types.GroupVersionKind("", "v1", "Pod"), "pods", "shop/web-0", "9",
                             is_initial_list=False, is_resync=True, final_state_unknown=True)
    context = context_from_wit(ctx)
    assert (context.kind, context.resource, context.key, context.resource_version) == (
        Pod.KIND, "pods", "shop/web-0", "9")
    assert (context.is_initial_list, context.is_resync, context.final_state_unknown) == (False, True, True)


class Counting(Handler):
    instances = 0

    @classmethod
    def manifest(cls):
        return Manifest("counting", "1").subscribe(Subscription.to(Pod))

    def __init__(self):
        Counting.instances += 1
        self.calls = []

    def on_add(self, event):
        self.calls.append(f"add {event.key}")
        if event.name == "bad":
            raise HandlerError("bad pod")
        if event.name == "broken":
            raise ValueError("no such thing")

    def on_update(self, event):
        self.calls.append(f"update {event.key}")
        log.info("; ".join(self.calls))


def test_one_instance_keeps_state_and_exceptions_become_err(bindings, no_export):
    _, runtime = bindings
    herald_sdk.export_plugin(Counting)
    dispatcher = Dispatcher(lambda message: (_ for _ in ()).throw(runtime.Err(message)))
    Counting.instances = 0
    good = testing.added({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "good", "namespace": "a"}})
    bad = testing.added({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bad", "namespace": "a"}})
    broken = testing.added({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "broken", "namespace": "a"}})
    dispatcher.call("on_add", good)
    with pytest.raises(runtime.Err) as refused:
        dispatcher.call("on_add", bad)
    assert refused.value.value == "bad pod"
    with pytest.raises(runtime.Err) as failed:
        dispatcher.call("on_add", broken)
    assert failed.value.value == "ValueError: no such thing"
    dispatcher.call("on_update", testing.resynced({"metadata": {"name": "good", "namespace": "a"}}, kind=Pod))
    dispatcher.call("on_delete", good)  # the default does nothing
    assert Counting.instances == 1
    assert testing.take_messages() == ["add a/good; add a/bad; add a/broken; update a/good"]


def test_exporting_is_checked(no_export):
    with pytest.raises(RuntimeError, match=r"herald_sdk.export_plugin\(YourHandlerClass\)"):
        require_exported_plugin()
    with pytest.raises(TypeError, match="subclass of herald_sdk.Handler"):
        herald_sdk.export_plugin(object)
    assert herald_sdk.export_plugin(Counting) is Counting
    herald_sdk.export_plugin(Counting)  # the same class again is fine

    class Other(Handler):
        pass

    with pytest.raises(RuntimeError, match="exports Counting already"):
        herald_sdk.export_plugin(Other)


def test_a_failing_manifest_is_logged_then_raised(no_export):
    class Broken(Handler):
        @classmethod
        def manifest(cls):
            raise ValueError("kinds: 'Pod' is not apiVersion/Kind")

    herald_sdk.export_plugin(Broken)
    with pytest.raises(ValueError):
        logged_manifest()
    assert [(str(line.level), line.message) for line in testing.take_logs()] == [
        ("error", "manifest() failed: ValueError: kinds: 'Pod' is not apiVersion/Kind")]


def test_host_imports_are_wrapped_and_cache_errors_mapped(bindings, monkeypatch):
    """``_wasm_host`` against the generated import modules, their functions replaced."""
    types, runtime = bindings
    wasm_host = importlib.import_module("herald_sdk._wasm_host")
    try:
        wit_cache, wit_log, wit_config = wasm_host.wit_cache, wasm_host.wit_log, wasm_host.wit_config
        calls = []
        monkeypatch.setattr(wit_log, "log", lambda level, message: calls.append((level, message)))
        monkeypatch.setattr(wit_config, "get", lambda: '{"a": 1}')
        wasm_host.log(log.Level.WARN, "careful")
        assert calls == [(wit_log.Level.WARN, "careful")]
        assert wasm_host.config() == '{"a": 1}'

        def refuse_kind(kind, namespace, name):
            raise runtime.Err(wit_cache.CacheError_NotSubscribed(kind))

        def refuse_selector(kind, namespace, selector):
            raise runtime.Err(wit_cache.CacheError_InvalidSelector("unexpected '('"))

        monkeypatch.setattr(wit_cache, "get", refuse_kind)
        monkeypatch.setattr(wit_cache, "list", refuse_selector)
        with pytest.raises(herald_sdk.NotSubscribed) as not_subscribed:
            wasm_host.cache_get(Pod.KIND, "shop", "web-0")
        assert not_subscribed.value.kind == Pod.KIND
        with pytest.raises(herald_sdk.InvalidSelector, match="unexpected '\\('"):
            wasm_host.cache_list(Pod.KIND, None, "a in (")

        monkeypatch.setattr(wit_cache, "get", lambda kind, namespace, name: f"{kind.kind} {namespace}/{name}")
        assert wasm_host.cache_get(Pod.KIND, "shop", "web-0") == "Pod shop/web-0"
    finally:
        del sys.modules["herald_sdk._wasm_host"]
