//! Manifests a plugin may return that the host must refuse, each with a
//! precise message naming the plugin or subscription and the problem. The
//! `recorder` fixture builds its manifest from its configuration, so every
//! case is a real component returning a real bad manifest. After each
//! refusal the same engine still loads a good plugin.

use herald::plugin::{LimitPolicy, Limits, LoadError, LoadOptions, LoadedPlugin};
use herald_tests::{artifacts, engine};
use std::time::Duration;

/// Loads the recorder with `config`; returns the load error's message.
fn refused(config: serde_json::Value, policy: LimitPolicy) -> String {
    let options = LoadOptions {
        config: Some(config.to_string()),
        policy,
        ..LoadOptions::default()
    };
    let bytes = artifacts::bytes(artifacts::RECORDER);
    let err = LoadedPlugin::load(engine(), &bytes, options).expect_err("must be refused");
    assert!(matches!(err, LoadError::Manifest(_)), "{err}");
    // Nothing else is disturbed: a good plugin loads in the same engine.
    LoadedPlugin::load(engine(), &bytes, LoadOptions::default()).expect("a good manifest loads");
    err.to_string()
}

fn refused_by_default(config: serde_json::Value) -> String {
    refused(config, LimitPolicy::default())
}

fn assert_says(message: &str, parts: &[&str]) {
    for part in parts {
        assert!(message.contains(part), "{message:?} lacks {part:?}");
    }
}

#[test]
fn a_malformed_label_selector_is_refused_naming_the_subscription() {
    let message = refused_by_default(serde_json::json!({"labelSelector": "app in (web"}));
    assert_says(
        &message,
        &[
            "subscription #0 (v1 Pod)",
            "label selector \"app in (web\" is invalid",
        ],
    );
}

#[test]
fn a_malformed_field_selector_is_refused() {
    let message = refused_by_default(serde_json::json!({"fieldSelector": "metadata.name"}));
    assert_says(&message, &["field selector \"metadata.name\" is invalid"]);
}

#[test]
fn absurd_resync_periods_are_refused_both_ways() {
    for millis in [10u64, 365 * 24 * 3_600_000] {
        let message = refused_by_default(serde_json::json!({"resyncMs": millis}));
        assert_says(
            &message,
            &[
                &format!("resync period of {millis} ms is out of range"),
                "1000 ms to 24 h",
            ],
        );
    }
}

#[test]
fn limits_above_the_operators_maximum_are_refused() {
    let policy = LimitPolicy {
        default: Limits {
            call_deadline: Duration::from_secs(1),
            memory_bytes: 64 << 20,
        },
        max: Limits {
            call_deadline: Duration::from_secs(2),
            memory_bytes: 128 << 20,
        },
    };
    let memory = refused(serde_json::json!({"memoryBytes": 1u64 << 33}), policy);
    assert_says(&memory, &["\"recorder\"", "8589934592", "134217728"]);
    let deadline = refused(serde_json::json!({"callDeadlineMs": 60_000}), policy);
    assert_says(&deadline, &["\"recorder\"", "60000", "2000"]);
}

#[test]
fn zero_limits_are_refused_with_advice() {
    let message = refused_by_default(serde_json::json!({"memoryBytes": 0}));
    assert_says(
        &message,
        &["requested memory of zero is invalid", "leave it unset"],
    );
}

#[test]
fn capabilities_that_do_not_exist_or_were_not_granted_are_refused() {
    let message = refused_by_default(serde_json::json!({"capabilities": ["cluster:write"]}));
    assert_says(&message, &["capability \"cluster:write\" does not exist"]);
    let message = refused_by_default(serde_json::json!({"capabilities": ["events"]}));
    assert_says(
        &message,
        &["requests capability \"events\", which the operator has not granted"],
    );
}

#[test]
fn invalid_plugin_names_and_kinds_are_refused() {
    let name = refused_by_default(serde_json::json!({"name": "Not_A_Name"}));
    assert_says(&name, &["plugin name \"Not_A_Name\" is invalid"]);
    let kind = refused_by_default(serde_json::json!({"kind": {"version": "", "kind": "Pod"}}));
    assert_says(&kind, &["subscription #0", "is incomplete"]);
    let namespace = refused_by_default(serde_json::json!({"namespace": "Bad Namespace"}));
    assert_says(
        &namespace,
        &["namespace \"Bad Namespace\" is not a valid namespace name"],
    );
}

#[test]
fn delivery_options_asking_for_batches_of_zero_are_refused_and_others_are_kept() {
    // The `floor` fixture answers `options` with its configuration's
    // `maxBatch`, through the raw bindings (the SDKs never answer 0).
    let bytes = artifacts::bytes(artifacts::FLOOR);
    let load = |max_batch: u32| {
        let options = LoadOptions {
            config: Some(serde_json::json!({ "maxBatch": max_batch }).to_string()),
            ..LoadOptions::default()
        };
        LoadedPlugin::load(engine(), &bytes, options)
    };
    let err = load(0).expect_err("batches of at most 0 must be refused");
    assert_says(
        &err.to_string(),
        &["delivery options", "max-batch must be at least 1"],
    );
    assert_eq!(load(64).expect("64 is fine").manifest().max_batch, 64);
    assert_eq!(
        LoadedPlugin::load(engine(), &bytes, LoadOptions::default())
            .expect("the floor loads")
            .manifest()
            .max_batch,
        1
    );
}
