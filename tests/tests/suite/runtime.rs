//! The runtime delivers each notification with its context and object intact.

use super::objects::{context, pod};
use herald::plugin::{CallError, PluginInstance};
use herald_tests::{artifacts, load, messages};

#[test]
fn recorder_sees_every_call_with_its_context() {
    let (plugin, logs) = load(artifacts::RECORDER, None);
    assert_eq!(plugin.name(), "recorder");
    let mut instance = PluginInstance::new(plugin).unwrap();

    let v1 = pod("shop", "web-1", 10);
    let v2 = pod("shop", "web-1", 11);
    let mut add_ctx = context(&v1);
    add_ctx.is_initial_list = true;
    instance.on_add(&add_ctx, &v1.to_string()).unwrap();
    let mut update_ctx = context(&v2);
    update_ctx.is_resync = true;
    instance
        .on_update(&update_ctx, &v1.to_string(), &v2.to_string())
        .unwrap();
    let mut delete_ctx = context(&v2);
    delete_ctx.final_state_unknown = true;
    instance.on_delete(&delete_ctx, &v2.to_string()).unwrap();

    assert_eq!(
        messages(&logs.take()),
        [
            "event=add key=shop/web-1 rv=10 initial=true resync=false unknown=false",
            "event=update key=shop/web-1 old_rv=10 rv=11 initial=false resync=true unknown=false",
            "event=delete key=shop/web-1 rv=11 initial=false resync=false unknown=true",
        ]
    );
}

#[test]
fn a_handler_error_is_returned_and_the_instance_keeps_its_state() {
    let (plugin, _logs) = load(artifacts::ALWAYS_ERROR, None);
    let mut instance = PluginInstance::new(plugin).unwrap();
    let object = pod("ns", "a", 1);
    for _ in 0..3 {
        let err = instance
            .on_add(&context(&object), &object.to_string())
            .unwrap_err();
        assert!(matches!(err, CallError::Handler(_)), "{err}");
    }
    assert_eq!(
        instance.rebuilds(),
        0,
        "a handler error is not a fault: no rebuild"
    );
}

#[test]
fn the_bench_pods_decode_inside_the_typed_and_the_lazy_plugins() {
    for file in ["pod-4k.json", "pod-16k.json"] {
        let path = format!("{}/../bench/data/{file}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let object: serde_json::Value = serde_json::from_str(&text).unwrap();
        let mut broken = object.clone();
        broken["status"]["containerStatuses"] = serde_json::json!("not a list");
        for fixture in [artifacts::TYPED_POD, artifacts::POD_VIEW] {
            let (plugin, _logs) = load(fixture, None);
            let mut instance = PluginInstance::new(plugin).unwrap();
            instance
                .on_add(&context(&object), &text)
                .unwrap_or_else(|e| panic!("{fixture} reads {file}: {e}"));
            let err = instance
                .on_add(&context(&broken), &broken.to_string())
                .expect_err("a Pod whose status is malformed does not decode");
            let herald::plugin::CallError::Handler(message) = &err else {
                panic!("{fixture}: {err}");
            };
            assert!(
                message.contains(r#"invalid type: string "not a list""#),
                "{fixture}: {message}"
            );
        }
    }
}
