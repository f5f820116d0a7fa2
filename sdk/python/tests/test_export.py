"""The component's exports, run natively against the bindings componentize-py
generates for the vendored WIT (``componentize-py bindings``), so the records
built here are the ones the component builds."""

import importlib
import subprocess
import sys

import pytest

import herald_sdk
from herald_sdk import Handler, HandlerError, Limits, Manifest, Subscription, Verb, WriteRule, events, kube, log, testing
from herald_sdk import handler as handler_module
from herald_sdk._export import (Admission, Delivery, Dispatcher, delivery_options, logged_manifest,
                                manifest_to_wit, mutation_to_wit, require_exported_plugin, review_from_wit,
                                verdict_to_wit, webhooks_to_wit)
from herald_sdk._frame import ADDED, DELETED, UPDATED, deliver, write
from herald_sdk.event import Context
from herald_sdk.admission import AdmissionRule, FailurePolicy, Mutation, Operation, UserInfo, Verdict, Webhook
from herald_sdk.build import WIT_DIR, WORLD
from herald_sdk.cache import Index
from herald_sdk.kinds import Pod, ReplicaSet
from herald_sdk.metrics import Metric


@pytest.fixture(scope="module")
def bindings(tmp_path_factory):
    """The generated modules: 0.2.0's ``types``, ``componentize_py_types`` and 0.3.0's ``types``."""
    target = tmp_path_factory.mktemp("bindings") / "out"
    launcher = "import sys; from componentize_py import script; sys.argv[0]='componentize-py'; sys.exit(script())"
    subprocess.run([sys.executable, "-c", launcher, "--wit-path", str(WIT_DIR), "--world", WORLD,
                    "bindings", str(target)], check=True, capture_output=True)
    sys.path.insert(0, str(target))
    try:
        yield (importlib.import_module("wit_world.imports.herald_plugin_types_0_2_0"),
               importlib.import_module("componentize_py_types"),
               importlib.import_module("wit_world.imports.herald_plugin_types_0_3_0"))
    finally:
        sys.path.remove(str(target))
        for name in [name for name in sys.modules if name.startswith(("wit_world", "componentize_py_types"))]:
            del sys.modules[name]


@pytest.fixture
def wit_admission(bindings):
    """The generated module of the ``admission`` export's types."""
    return importlib.import_module("wit_world.exports.admission")


@pytest.fixture
def no_export():
    """Clears the exported class before and after the test."""
    handler_module._exported = None
    yield
    handler_module._exported = None


def test_manifest_becomes_the_generated_record(bindings):
    types, _, types_0_3 = bindings
    manifest = (Manifest("watcher", "1.0.0")
                .subscribe(Subscription.to(Pod).namespace("web").labels("app=web")
                           .fields("spec.nodeName=n").resync(seconds=1.5).coalesced())
                .subscribe_kind("example.com", "v1", "Widget")
                .limits(Limits().call_deadline(seconds=2).memory_bytes(4096))
                .write(WriteRule.to(Pod).verbs(Verb.GET, Verb.DELETE).namespaces("web"))
                .write(WriteRule.to("apps", "Deployment").verbs("patch", "apply").status().all_namespaces())
                .subscribe(Subscription.to(ReplicaSet))
                .capability("net")
                .metric(Metric.counter("alerts_total", "Alerts").labels("namespace"))
                .metric(Metric.histogram("took_seconds", "Time taken").buckets(0.1, 1))
                .index(Index.by_owner("owner", ReplicaSet))
                .index(Index.by_label("app", ReplicaSet, "app"))
                .index(Index.by_field("node", Pod, "spec.nodeName")))
    expected = types_0_3.Manifest(
        name="watcher", version="1.0.0",
        subscriptions=[
            types.Subscription(types.GroupVersionKind("", "v1", "Pod"), "web", "app=web", "spec.nodeName=n",
                               1500, types.DeliveryMode.COALESCED),
            types.Subscription(types.GroupVersionKind("example.com", "v1", "Widget"), None, None, None,
                               None, types.DeliveryMode.EVERY_EVENT),
            types.Subscription(types.GroupVersionKind("apps", "v1", "ReplicaSet"), None, None, None,
                               None, types.DeliveryMode.EVERY_EVENT),
        ],
        limits=types.Limits(call_deadline_ms=2000, memory_bytes=4096),
        capabilities=["net"],
        writes=[
            types.WriteRule([types.Verb.GET, types.Verb.DELETE], "", "Pod", None, ["web"]),
            types.WriteRule([types.Verb.PATCH, types.Verb.APPLY], "apps", "Deployment", "status", ["*"]),
        ],
        metrics=[
            types_0_3.MetricDefinition("alerts_total", "Alerts", types_0_3.MetricKind.COUNTER, ["namespace"], []),
            types_0_3.MetricDefinition("took_seconds", "Time taken", types_0_3.MetricKind.HISTOGRAM, [], [0.1, 1.0]),
        ],
        indexes=[
            types_0_3.IndexDefinition("owner", types.GroupVersionKind("apps", "v1", "ReplicaSet"),
                                      types_0_3.IndexBy_Owner()),
            types_0_3.IndexDefinition("app", types.GroupVersionKind("apps", "v1", "ReplicaSet"),
                                      types_0_3.IndexBy_Label("app")),
            types_0_3.IndexDefinition("node", types.GroupVersionKind("", "v1", "Pod"),
                                      types_0_3.IndexBy_Field("spec.nodeName")),
        ])
    assert manifest_to_wit(manifest, types, types_0_3) == expected
    with pytest.raises(TypeError, match="must return a herald_sdk.Manifest"):
        manifest_to_wit({"name": "x"}, types, types_0_3)


def context(key, initial=False, resync=False, unknown=False):
    return Context(Pod.KIND, "pods", key, "9", is_initial_list=initial, is_resync=resync,
                   final_state_unknown=unknown)


class Recording:
    """Handlers for :func:`deliver` that keep what they were handed."""

    def __init__(self):
        self.read = []
        self.methods = tuple(lambda argument, method=method: self.read.append((method, argument))
                             for method in ("on_add", "on_update", "on_delete"))

    @staticmethod
    def fail(index, message):
        return index, message


def read_back(frame):
    """The frame's notifications as ``deliver`` hands them over, and its failure."""
    recording = Recording()
    failed = deliver(recording, frame)
    return recording.read, failed


class Dispatching:
    """Handlers for :func:`deliver` from a :class:`Dispatcher`, as ``Delivery`` has them."""

    methods = None

    def __init__(self, dispatcher):
        self.dispatcher = dispatcher

    def bind(self):
        self.methods = self.dispatcher.bind()
        return self.methods

    @staticmethod
    def fail(index, message):
        return index, message


def test_a_frame_reads_back_as_the_notifications_written():
    frame = write([(ADDED, context("shop/a", initial=True), '{"a": 1}', None),
                   (UPDATED, context("shop/b", resync=True), '{"é": 2}', "{}"),
                   (UPDATED, context("shop/b"), "{}", None),
                   (DELETED, context("c", unknown=True), '{"c": 3}', None)])
    read, failed = read_back(frame)
    assert failed is None
    assert [method for method, _ in read] == ["on_add", "on_update", "on_update", "on_delete"]
    added, with_old, without_old, deleted = (argument for _, argument in read)
    assert (added.context, added.json, added.object["a"]) == (context("shop/a", initial=True), '{"a": 1}', 1)
    assert (with_old.key, with_old.is_resync, with_old.old_json, with_old.new["é"]) == ("shop/b", True, "{}", 2)
    assert without_old.old_json == ""
    with pytest.raises(HandlerError, match="OLD_STATE"):
        without_old.old
    assert (deleted.namespace, deleted.name, deleted.final_state_unknown) == (None, "c", True)


def test_a_malformed_frame_fails_after_the_good_notifications():
    one = write([(ADDED, context("shop/a"), "{}", None)])
    read, failed = read_back(b"\x02" + one[1:])
    assert [method for method, _ in read] == ["on_add"]
    assert failed == (1, f"malformed delivery frame: it ends at byte {len(one)} inside a notification's head")
    assert read_back(b"\x01") == ([], (0, "malformed delivery frame: 1 bytes, too short for its count"))
    assert read_back(b"\x01\x00\x00\x00")[1] == (0, "malformed delivery frame: it ends at byte 4 "
                                                     "inside a notification's head")
    assert read_back(one[:4] + b"\x09" + one[5:]) == (
        [], (0, "malformed delivery frame: unknown notification type 9 or flags 0 (a newer host?)"))
    assert read_back(one[:5] + b"\x10" + one[6:])[1][1].endswith("or flags 16 (a newer host?)")
    assert read_back(one + b"x")[1] == (1, "malformed delivery frame: 1 bytes follow its last notification")
    assert read_back(one[:-1]) == ([], (0, f"malformed delivery frame: a notification runs past the frame's "
                                           f"end ({len(one) - 1} bytes)"))
    assert read_back(b"\x00\x00\x00\x00") == ([], None)
    assert read_back(b"\x00\x00\x00\x00x")[1] == (0, "malformed delivery frame: 1 bytes follow its last "
                                                       "notification")
    old = write([(UPDATED, context("shop/a"), "{}", "{}")])
    assert read_back(old[:-4])[1] == (0, f"malformed delivery frame: it ends at byte {len(old) - 4} inside "
                                         "a length")


def test_delivery_options_say_what_the_class_declares(bindings):
    delivery = importlib.import_module("wit_world.exports.delivery")

    class Plain(Handler):
        pass

    class NewOnly(Handler):
        OLD_STATE = False
        MAX_BATCH = 16

    assert delivery_options(Plain, delivery) == delivery.DeliveryOptions(old_state=True, max_batch=1)
    assert delivery_options(NewOnly, delivery) == delivery.DeliveryOptions(old_state=False, max_batch=16)
    NewOnly.MAX_BATCH = 0
    with pytest.raises(TypeError, match="MAX_BATCH must be an int of at least 1"):
        delivery_options(NewOnly, delivery)


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
    _, runtime, _ = bindings
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


def test_a_frame_is_delivered_in_order_until_a_notification_fails(bindings, no_export):
    herald_sdk.export_plugin(Counting)
    dispatcher = Dispatcher(lambda message: None)
    handlers = Dispatching(dispatcher)
    frame = write([(ADDED, context("a/one"), "{}", None), (ADDED, context("a/bad"), "{}", None),
                   (ADDED, context("a/later"), "{}", None)])
    assert deliver(handlers, frame) == (1, "bad pod")
    assert dispatcher._instance.calls == ["add a/one", "add a/bad"]
    assert deliver(handlers, write([(UPDATED, context("a/one"), "{}", "{}")])) is None
    # Bytes after the last notification fail past it, once it is handled:
    # nothing the host sent is retried for them.
    one = write([(ADDED, context("a/tail"), "{}", None)])
    assert deliver(handlers, one + b"x") == (1, "malformed delivery frame: 1 bytes follow its last "
                                                           "notification")
    assert dispatcher._instance.calls[-1] == "add a/tail"
    testing.take_messages()


class Unborn(Handler):
    def __init__(self):
        raise ValueError("no configuration")


def test_a_handler_that_cannot_be_created_fails_the_first_notification(no_export):
    herald_sdk.export_plugin(Unborn)
    dispatcher = Dispatcher(lambda message: None)
    handlers = Dispatching(dispatcher)
    frame = write([(ADDED, context("a/one"), "{}", None)])
    assert deliver(handlers, b"\x00\x00\x00\x00") is None  # nothing to hand over: not created
    assert deliver(handlers, frame) == (0, "ValueError: no configuration")
    assert deliver(handlers, frame) == (0, "ValueError: no configuration")


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
    types, runtime, _ = bindings
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


def test_kube_and_events_imports_are_wrapped_and_errors_mapped(bindings, monkeypatch):
    """``_wasm_host``'s kube and events calls against the generated modules,
    their functions replaced: the records sent, and every kube-error case
    raised as its KubeError subclass."""
    types, runtime, _ = bindings
    wasm_host = importlib.import_module("herald_sdk._wasm_host")
    try:
        wit_kube, wit_events = wasm_host.wit_kube, wasm_host.wit_events
        sent = []
        monkeypatch.setattr(wit_kube, "patch", lambda target, patch_type, patch: sent.append(
            (target, patch_type, patch)) or '{"kind": "Pod"}')
        monkeypatch.setattr(wit_kube, "delete", lambda target, options: sent.append((target, options)))
        monkeypatch.setattr(wit_kube, "create", lambda kind, namespace, body: sent.append((kind, namespace)) or body)
        monkeypatch.setattr(wit_events, "publish", lambda event: sent.append(event))
        pod_gvk = types.GroupVersionKind("", "v1", "Pod")
        target = kube.Target(Pod.KIND, "shop", "web-0", "status")
        assert wasm_host.kube_patch(target, "strategic", "{}") == '{"kind": "Pod"}'
        wasm_host.kube_delete(kube.Target(Pod.KIND, None, "n"), "u", "9", "orphan")
        assert wasm_host.kube_create(Pod.KIND, "shop", "{}") == "{}"
        wasm_host.events_publish(events.event({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}},
                                              "Warning", "Bad", "note", related={"apiVersion": "v1", "kind": "Node",
                                                                                 "metadata": {"name": "n"}}))
        assert sent[0] == (wit_kube.Target(pod_gvk, "shop", "web-0", "status"), wit_kube.PatchType.STRATEGIC, "{}")
        assert sent[1] == (wit_kube.Target(pod_gvk, None, "n", None),
                           wit_kube.DeleteOptions("u", "9", wit_kube.Propagation.ORPHAN))
        assert sent[2] == (pod_gvk, "shop")
        assert sent[3] == wit_events.Event(
            regarding=wit_events.ObjectReference(pod_gvk, None, "p", None, None),
            related=wit_events.ObjectReference(types.GroupVersionKind("", "v1", "Node"), None, "n", None, None),
            event_type=wit_events.EventType.WARNING, reason="Bad", action="Bad", note="note")

        cases = [
            (wit_kube.KubeError_NotGranted("no rule"), kube.NotGranted("no rule")),
            (wit_kube.KubeError_NotFound("gone"), kube.NotFound("gone")),
            (wit_kube.KubeError_AlreadyExists("there"), kube.AlreadyExists("there")),
            (wit_kube.KubeError_Conflict("stale"), kube.Conflict("stale")),
            (wit_kube.KubeError_Invalid(wit_kube.InvalidError("bad", [wit_kube.Cause("R", "M", "spec.x")])),
             kube.Invalid("bad", [kube.Cause("R", "M", "spec.x")])),
            (wit_kube.KubeError_Forbidden("rbac"), kube.Forbidden("rbac")),
            (wit_kube.KubeError_TooManyRequests(wit_kube.Throttled("slow", 250)), kube.TooManyRequests("slow", 250)),
            (wit_kube.KubeError_Timeout("late"), kube.Timeout("late")),
            (wit_kube.KubeError_Unavailable("down"), kube.Unavailable("down")),
            (wit_kube.KubeError_Failed(wit_kube.ApiStatus(415, "UnsupportedMediaType", "no")),
             kube.Failed("no", 415, "UnsupportedMediaType")),
        ]
        for wit_error, expected in cases:
            def refuse(target, error=wit_error):
                raise runtime.Err(error)

            monkeypatch.setattr(wit_kube, "get", refuse)
            with pytest.raises(kube.KubeError) as raised:
                wasm_host.kube_get(target)
            assert raised.value == expected

        def refuse_event(event):
            raise runtime.Err(wit_kube.KubeError_NotGranted("events capability not granted"))

        monkeypatch.setattr(wit_events, "publish", refuse_event)
        with pytest.raises(kube.NotGranted, match="events capability"):
            wasm_host.events_publish(events.event({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}},
                                                  "Normal", "Ok", "fine"))
    finally:
        del sys.modules["herald_sdk._wasm_host"]


def test_metrics_workqueue_deadline_and_index_imports_are_wrapped(bindings, monkeypatch):
    """``_wasm_host``'s 0.3.0 and 0.4.0 calls against the generated modules,
    their functions replaced."""
    _, runtime, _ = bindings
    wasm_host = importlib.import_module("herald_sdk._wasm_host")
    try:
        calls = []
        for op in ("add", "set", "observe"):
            monkeypatch.setattr(wasm_host.wit_metrics, op,
                                lambda name, labels, value, op=op: calls.append((op, name, labels, value)))
        monkeypatch.setattr(wasm_host.wit_workqueue, "requeue_after", lambda ms: calls.append(("requeue", ms)))
        monkeypatch.setattr(wasm_host.wit_deadline, "remaining_ms", lambda: 42)
        wasm_host.metrics_update("add", "alerts_total", ["shop"], 1.0)
        wasm_host.metrics_update("set", "stuck", [], 2.0)
        wasm_host.metrics_update("observe", "took_seconds", [], 0.5)
        wasm_host.requeue_after(30_000)
        assert calls == [("add", "alerts_total", ["shop"], 1.0), ("set", "stuck", [], 2.0),
                         ("observe", "took_seconds", [], 0.5), ("requeue", 30_000)]
        assert wasm_host.remaining_ms() == 42

        monkeypatch.setattr(wasm_host.wit_index, "lookup", lambda name, value, namespace: [f"{name}={value} {namespace}"])
        assert wasm_host.index_lookup("owner", "u-1", "shop") == ["owner=u-1 shop"]

        def unknown(name, value, namespace):
            raise runtime.Err(wasm_host.wit_index.IndexError_UnknownIndex(name))

        monkeypatch.setattr(wasm_host.wit_index, "lookup", unknown)
        with pytest.raises(herald_sdk.UnknownIndex, match="nodes"):
            wasm_host.index_lookup("nodes", "n", None)
    finally:
        del sys.modules["herald_sdk._wasm_host"]


def test_wasi_http_error_codes_map_to_the_sdk_kinds(bindings):
    """The transport's view of wasi:http's error codes, as the Rust SDK's."""
    wasi_http = importlib.import_module("herald_sdk._wasi_http")
    try:
        wit = wasi_http.wit
        cases = [
            (wit.ErrorCode_HttpRequestDenied(), "denied", ""),
            (wit.ErrorCode_DestinationIpProhibited(), "denied", ""),
            (wit.ErrorCode_ConnectionTimeout(), "timeout", "connecting"),
            (wit.ErrorCode_HttpResponseTimeout(), "timeout", "waiting for the response"),
            (wit.ErrorCode_ConnectionRefused(), "connection", "refused"),
            (wit.ErrorCode_HttpResponseBodySize(9), "too-large", "the host's response body limit"),
            (wit.ErrorCode_HttpRequestUriInvalid(), "invalid-url", "the host refused it"),
            (wit.ErrorCode_InternalError("boom"), "protocol", "internal error: boom"),
            (wit.ErrorCode_HttpProtocolError(), "protocol", "HttpProtocolError"),
        ]
        for code, kind, detail in cases:
            error = wasi_http._from_error_code(code)
            assert (error.kind, error.detail) == (kind, detail), code
    finally:
        del sys.modules["herald_sdk._wasi_http"]


def test_webhooks_become_the_generated_record(bindings, wit_admission, no_export):
    types, _, _ = bindings
    manifest = (Manifest("pods", "1")
                .validating(Webhook().rule(AdmissionRule.to(Pod).create().update())
                            .rule(AdmissionRule.to("apps", "v1", "Deployment").operation("UPDATE")
                                  .subresource("scale")))
                .mutating(Webhook().rule(AdmissionRule.to(Pod).create()).in_namespaces("shop")
                          .objects_labelled("app=web").failure_policy(FailurePolicy.IGNORE).timeout_seconds(5)))
    pod_gvk = types.GroupVersionKind("", "v1", "Pod")
    assert webhooks_to_wit(manifest, wit_admission, types) == wit_admission.Webhooks(
        validating=wit_admission.Webhook(
            rules=[wit_admission.Rule(pod_gvk, [wit_admission.Operation.CREATE, wit_admission.Operation.UPDATE],
                                      None),
                   wit_admission.Rule(types.GroupVersionKind("apps", "v1", "Deployment"),
                                      [wit_admission.Operation.UPDATE], "scale")],
            namespace_selector=None, object_selector=None, failure_policy=wit_admission.FailurePolicy.FAIL,
            timeout_seconds=None),
        mutating=wit_admission.Webhook(
            rules=[wit_admission.Rule(pod_gvk, [wit_admission.Operation.CREATE], None)],
            namespace_selector="kubernetes.io/metadata.name in (shop)", object_selector="app=web",
            failure_policy=wit_admission.FailurePolicy.IGNORE, timeout_seconds=5))
    herald_sdk.export_plugin(Counting)
    assert Admission().declare() == wit_admission.Webhooks(validating=None, mutating=None), \
        "a plugin that admits nothing declares no webhook"


def test_the_review_comes_from_the_generated_record(bindings, wit_admission):
    types, _, _ = bindings
    record = wit_admission.Review(
        uid="u-1", kind=types.GroupVersionKind("", "v1", "Pod"), resource="pods", subresource="",
        name="web-0", namespace="shop", operation=wit_admission.Operation.CONNECT,
        user_info=wit_admission.UserInfo("alice", "42", ["dev"], [("scopes", ["read"])]),
        object='{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0"}}', old_object=None,
        dry_run=True, options='{"kind": "PodExecOptions"}')
    review = review_from_wit(record)
    assert (review.uid, review.kind, review.resource, review.name, review.namespace, review.operation) == (
        "u-1", Pod.KIND, "pods", "web-0", "shop", Operation.CONNECT)
    assert review.user_info == UserInfo("alice", "42", ["dev"], {"scopes": ["read"]})
    assert (review.dry_run, review.options, review.old_object_json) == (True, {"kind": "PodExecOptions"}, None)
    assert isinstance(review.object, Pod) and review.object.name == "web-0"


class Deciding(Handler):
    """Validates and mutates by the Pod's name."""

    @classmethod
    def manifest(cls):
        return Manifest("deciding", "1").validating(Webhook().rule(AdmissionRule.to(Pod).create()))

    def validate(self, review):
        if review.name == "broken":
            return review.object["spec"]["containers"]
        if review.name == "wrong":
            return True
        return Verdict.deny("no", code=409).warn("careful") if review.name == "bad" else Verdict.allow()

    def mutate(self, review):
        if review.name == "patched":
            return Mutation.patch([{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}])
        if review.name == "both":
            return Mutation(Verdict.allow(), json_patch=[], changed_object={})
        return Mutation.object({**review.object, "spec": {}}).warn("emptied")


def test_decisions_become_records_and_exceptions_err(bindings, wit_admission, no_export):
    _, runtime, _ = bindings
    dispatcher = Dispatcher(lambda message: (_ for _ in ()).throw(runtime.Err(message)))
    herald_sdk.export_plugin(Deciding)

    def review(name):
        return testing.creating({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "a"}})

    def validate(name):
        return dispatcher.call("validate", review(name), lambda verdict: verdict_to_wit(verdict, wit_admission))

    def mutate(name):
        return dispatcher.call("mutate", review(name), lambda mutation: mutation_to_wit(mutation, wit_admission))

    assert validate("good") == wit_admission.Verdict(allowed=True, code=None, message="", warnings=[])
    assert validate("bad") == wit_admission.Verdict(allowed=False, code=409, message="no", warnings=["careful"])
    with pytest.raises(runtime.Err) as broken:
        validate("broken")
    assert broken.value.value == "KeyError: 'spec'"
    with pytest.raises(runtime.Err) as wrong:
        validate("wrong")
    assert wrong.value.value == "TypeError: validate() must return a herald_sdk.admission.Verdict, got True"

    patched = mutate("patched")
    assert patched.verdict == wit_admission.Verdict(True, None, "", [])
    assert patched.change == wit_admission.Change_JsonPatch(
        '[{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}]')
    changed = mutate("changed")
    assert changed.verdict.warnings == ["emptied"]
    assert changed.change == wit_admission.Change_Object(
        '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "changed", "namespace": "a"}, "spec": {}}')
    assert mutation_to_wit(Mutation.none(), wit_admission).change == wit_admission.Change_None_()
    with pytest.raises(runtime.Err) as both:
        mutate("both")
    assert both.value.value == ("ValueError: a mutation changes the object by a JSON Patch or by the changed "
                                "object, not both")


def test_a_plugin_that_does_not_admit_answers_err(bindings, wit_admission, no_export):
    _, runtime, _ = bindings
    dispatcher = Dispatcher(lambda message: (_ for _ in ()).throw(runtime.Err(message)))
    herald_sdk.export_plugin(Counting)
    pod = testing.creating({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}})
    for decision, convert in (("validate", verdict_to_wit), ("mutate", mutation_to_wit)):
        with pytest.raises(runtime.Err) as refused:
            dispatcher.call(decision, pod, lambda value: convert(value, wit_admission))
        assert refused.value.value == f"the plugin does not admit: Counting defines no {decision}()"
