//! `herald.yaml` and plugin sidecar files: [`Config::parse`] and
//! [`PluginSettings::parse_sidecar`](herald::reload::PluginSettings::parse_sidecar) on any text.
//!
//! - Neither panics.
//! - An accepted configuration passes [`Config::validate`].
//! - An accepted sidecar asks for no limit above `limits.max`.
//! - A refusal names the input and a key, says what is wrong, and is one line.

use herald::config::{Config, ConfigError};

/// The name the input is parsed under; errors must carry it.
const SOURCE: &str = "fuzz";

/// Parses `data` (if UTF-8) as a configuration and as a sidecar, under the
/// default configuration and under the parsed one.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Config::parse(text, SOURCE) {
        Ok(config) => {
            if let Err(invalid) = config.validate() {
                panic!("{text:?} was accepted but does not validate: {invalid}");
            }
            check_sidecar(&config, text);
        }
        Err(err) => check_error(text, &err),
    }
    check_sidecar(&Config::default(), text);
}

fn check_sidecar(config: &Config, text: &str) {
    let sidecar = match config.plugin_settings().parse_sidecar(text, SOURCE) {
        Ok(sidecar) => sidecar,
        Err(err) => return check_error(text, &err),
    };
    let max = &config.limits.max;
    if let Some(deadline) = sidecar.limits.call_deadline {
        assert!(
            deadline <= max.call_deadline,
            "sidecar {text:?} was accepted with a call deadline of {deadline:?}, above the maximum {:?}",
            max.call_deadline
        );
    }
    if let Some(memory) = sidecar.limits.memory {
        assert!(
            memory <= max.memory,
            "sidecar {text:?} was accepted with {memory} bytes of memory, above the maximum {}",
            max.memory
        );
    }
}

fn check_error(text: &str, err: &ConfigError) {
    assert_eq!(
        err.source_name, SOURCE,
        "{text:?}: the error names another source: {err:?}"
    );
    assert!(
        !err.key.is_empty(),
        "{text:?}: the error names no key: {err:?}"
    );
    assert!(
        !err.problem.is_empty(),
        "{text:?}: the error says nothing: {err:?}"
    );
    assert!(
        super::is_one_line(&err.to_string()),
        "{text:?}: the error is not one line: {err:?}"
    );
}
