//! The configuration read end to end: keys, defaults and the errors that
//! name the key at fault.

use super::*;
use crate::dispatch::KeyBackoff;
use crate::leader::SERVICE_ACCOUNT_NAMESPACE_FILE;
use std::time::Duration;

fn error(text: &str) -> ConfigError {
    Config::parse(text, "herald.yaml").expect_err("must be refused")
}

#[test]
fn an_empty_file_means_every_default() {
    assert_eq!(Config::parse("", "herald.yaml").unwrap(), Config::default());
}

#[test]
fn the_worker_pool_defaults_to_one_thread_per_cpu_and_refuses_zero() {
    let config = Config::default();
    assert_eq!(config.dispatch.workers(), crate::plugin::default_workers());
    let config = Config::parse("dispatch:\n  workers: 3\n", "herald.yaml").unwrap();
    assert_eq!(config.dispatch.workers(), 3);
    let refused = error("dispatch:\n  workers: 0\n").to_string();
    assert!(
        refused.contains("dispatch.workers") && refused.contains("between 1 and 1024"),
        "{refused}"
    );
}

#[test]
fn built_in_kinds_are_read_over_protobuf_unless_turned_off() {
    assert!(Config::default().cache.protobuf);
    let config = Config::parse("cache:\n  protobuf: false\n", "herald.yaml").unwrap();
    assert!(!config.cache.protobuf);
    let refused = error("cache:\n  protobuf: sometimes\n").to_string();
    assert!(refused.contains("cache.protobuf"), "{refused}");
}

#[test]
fn every_key_of_the_example_config_parses() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/herald.yaml"
    ))
    .unwrap();
    let config = Config::parse(&text, "examples/herald.yaml").unwrap();
    assert_eq!(
        config.plugins["image-policy"].config.as_ref().unwrap()["allowedRegistries"][0],
        "docker.io"
    );
}

/// Every dotted configuration key that a message of the host's code
/// names (in a string literal outside tests) is documented in
/// docs/config.md, so an error never points at a setting that does not
/// exist. `plugins.{name}…` is read as `plugins.<name>…`.
#[test]
fn every_setting_an_error_names_is_documented() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let documented: Vec<String> = std::fs::read_to_string(root.join("../docs/config.md"))
        .unwrap()
        .lines()
        .filter_map(|line| line.strip_prefix("| `")?.split('`').next())
        .map(str::to_owned)
        .collect();
    assert!(documented.len() > 30, "docs/config.md lists the keys");
    // A key matches a documented one, or the start of one, segment by
    // segment; a `{placeholder}` segment matches any.
    let is_documented = |key: &str| {
        let key: Vec<&str> = key.split('.').collect();
        documented.iter().any(|doc| {
            let doc: Vec<&str> = doc.split('.').collect();
            key.len() <= doc.len()
                && key
                    .iter()
                    .zip(&doc)
                    .all(|(k, d)| k == d || k.starts_with('{'))
        })
    };
    let mut named = Vec::new();
    let mut sources = vec![root.join("src")];
    while let Some(path) = sources.pop() {
        if path.is_dir() {
            sources.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap();
            for literal in string_literals(code) {
                for key in setting_names(&literal) {
                    named.push((path.display().to_string(), key));
                }
            }
        }
    }
    assert!(
        named.iter().any(|(_, key)| key == "pluginFiles.maxSize"),
        "the scan finds the keys errors name: {named:?}"
    );
    let undocumented: Vec<_> = named
        .iter()
        .filter(|(_, key)| !is_documented(key))
        .collect();
    assert!(
        undocumented.is_empty(),
        "named but not in docs/config.md: {undocumented:?}"
    );
}

/// The contents of the string literals in `code`, outside `//` comments.
fn string_literals(code: &str) -> Vec<String> {
    let mut literals = Vec::new();
    for line in code.lines() {
        let mut chars = line.chars().peekable();
        let mut current: Option<String> = None;
        let mut previous = ' ';
        while let Some(c) = chars.next() {
            match &mut current {
                Some(literal) => match c {
                    '\\' => {
                        chars.next();
                    }
                    '"' => literals.push(current.take().unwrap()),
                    _ => literal.push(c),
                },
                None if c == '/' && chars.peek() == Some(&'/') => break,
                None if c == '"' && previous != '\'' => current = Some(String::new()),
                None => {}
            }
            previous = c;
        }
        // A literal continued on the next line is read up to here.
        literals.extend(current);
    }
    literals
}

/// Dotted keys under a top-level configuration section named in `text`.
fn setting_names(text: &str) -> Vec<String> {
    const SECTIONS: &[&str] = &[
        "source",
        "log",
        "cache",
        "limits",
        "queue",
        "shutdown",
        "pluginFiles",
        "plugins",
        "leaderElection",
        "sharding",
        "pluginSources[]",
    ];
    // A list entry's index is a placeholder: `pluginSources[{i}].oci`
    // is the documented `pluginSources[].oci`.
    let text = &text.replace("[{i}]", "[]");
    let mut keys = Vec::new();
    for (start, _) in text.match_indices('.') {
        let before = &text[..start];
        let Some(section) = SECTIONS.iter().find(|s| {
            before.ends_with(*s)
                && !before[..before.len() - s.len()]
                    .ends_with(|c: char| c.is_alphanumeric() || c == '.' || c == '_')
        }) else {
            continue;
        };
        let rest: String = text[start + 1..]
            .chars()
            .take_while(|c| {
                c.is_alphanumeric() || matches!(c, '.' | '-' | '{' | '}' | '<' | '>' | '_')
            })
            .collect();
        let rest = rest.trim_end_matches('.');
        if rest.is_empty() {
            continue; // the end of a sentence
        }
        let key = if *section == "plugins" {
            let (name, tail) = rest.split_once('.').unwrap_or((rest, ""));
            if name == "d" && tail.is_empty() {
                continue; // the directory `plugins.d`
            }
            // A plugin's name is a placeholder in a message; a literal
            // one is kept as is, and is then not a documented key.
            let name = if name.starts_with('{') || name.starts_with('<') {
                "<name>"
            } else {
                name
            };
            match tail {
                "" => format!("plugins.{name}"),
                tail => format!("plugins.{name}.{tail}"),
            }
        } else {
            format!("{section}.{rest}")
        };
        keys.push(key);
    }
    keys
}

#[test]
fn an_http_grant_parses_with_defaults_and_grants_the_capability() {
    let config = Config::parse(
        "plugins:\n  notify:\n    grants:\n      http:\n        allowedOrigins: \
         [https://hooks.example.com, 'http://10.0.0.7:8080', 'https://*.example.com']\n        \
         maxResponseSize: 64Ki\n",
        "herald.yaml",
    )
    .unwrap();
    let grants = config.plugin_settings().grants_for("notify", None);
    let http = grants.http.as_ref().expect("the grant");
    assert_eq!(http.allowed_origins.len(), 3);
    assert_eq!(http.max_response_size, 64 << 10);
    assert_eq!(
        http.connect_timeout,
        crate::capability::http::DEFAULT_CONNECT_TIMEOUT
    );
    assert_eq!(http.timeout, crate::capability::http::DEFAULT_TIMEOUT);
    assert_eq!(
        http.max_concurrent,
        crate::capability::http::DEFAULT_MAX_CONCURRENT
    );
    assert!(
        config
            .plugin_settings()
            .grants_for("other", None)
            .http
            .is_none()
    );
}

#[test]
fn a_bad_http_grant_names_the_key_at_fault() {
    let grant = |body: &str| error(&format!("plugins:\n  x:\n    grants:\n{body}"));
    let err =
        grant("      http:\n        allowedOrigins: [https://a.example.com, hooks.example.com]\n");
    assert_eq!(err.key, "plugins.x.grants.http.allowedOrigins[1]");
    assert!(err.problem.contains("no scheme"), "{err}");
    let err = grant("      http:\n        allowedOrigins: [https://a.example.com/api]\n");
    assert_eq!(err.key, "plugins.x.grants.http.allowedOrigins[0]");
    let err = grant("      http:\n        allowedOrigins: []\n");
    assert_eq!(err.key, "plugins.x.grants.http.allowedOrigins");
    let err = grant(
        "      http:\n        allowedOrigins: [https://a.example.com]\n        maxConcurrent: 0\n",
    );
    assert_eq!(err.key, "plugins.x.grants.http.maxConcurrent");
    let err =
        grant("      http:\n        allowedOrigins: [https://a.example.com]\n        retries: 3\n");
    assert_eq!(err.key, "plugins.x.grants.http.retries");
    let err = grant("      http:\n        timeout: 5s\n");
    assert_eq!(err.key, "plugins.x.grants.http");
    assert!(err.problem.contains("allowedOrigins"), "{err}");
    // The capability is granted by its section, not by its name alone.
    let err = grant("      capabilities: [http]\n");
    assert_eq!(err.key, "plugins.x.grants.http");
}

#[test]
fn each_limit_left_out_keeps_its_own_default() {
    let config = Config::parse("limits:\n  max:\n    callDeadline: 120s\n", "herald.yaml").unwrap();
    let defaults = LimitsConfig::default();
    assert_eq!(config.limits.max.call_deadline, Duration::from_secs(120));
    assert_eq!(config.limits.max.memory, defaults.max.memory);
    assert_eq!(config.limits.default, defaults.default);
}

#[test]
fn unknown_keys_are_named_with_their_path() {
    let err = error("limits:\n  default:\n    callDeadline: 1s\n    memory: 64Mi\n    cpu: 2\n");
    assert_eq!(err.key, "limits.default.cpu");
    assert!(err.problem.contains("unknown field `cpu`"), "{err}");
}

#[test]
fn bad_values_name_the_key_and_the_problem() {
    let err = error("limits:\n  max:\n    callDeadline: soon\n    memory: 1Gi\n");
    assert_eq!(err.key, "limits.max.callDeadline");
    assert!(err.problem.contains("not a duration"), "{err}");
    let err = error("limits:\n  default: {callDeadline: 1s, memory: 64 apples}\n");
    assert_eq!(err.key, "limits.default.memory");
    let err = error("listen: not-an-address\n");
    assert_eq!(err.key, "listen");
    let err = error("log:\n  format: xml\n");
    assert_eq!(err.key, "log.format");
    assert_eq!(err.to_string().split(':').next(), Some("herald.yaml"));
}

#[test]
fn plugin_series_caps_default_to_the_global_one_and_are_bounded() {
    let sink: std::sync::Arc<dyn crate::capability::log::LogSink> =
        std::sync::Arc::new(crate::capability::log::MemorySink::default());
    let config = Config::parse("", "herald.yaml").unwrap();
    assert_eq!(config.plugin_metrics.max_series, 1000);
    assert_eq!(
        config
            .plugin_settings()
            .load_options("any", None, sink.clone())
            .max_metric_series,
        1000
    );
    let config = Config::parse(
        "pluginMetrics: {maxSeries: 50}\nplugins:\n  chatty:\n    metrics: {maxSeries: 5000}\n",
        "herald.yaml",
    )
    .unwrap();
    assert_eq!(
        config
            .plugin_settings()
            .load_options("chatty", None, sink.clone())
            .max_metric_series,
        5000
    );
    assert_eq!(
        config
            .plugin_settings()
            .load_options("other", None, sink.clone())
            .max_metric_series,
        50
    );
    assert_eq!(
        config
            .plugin_settings()
            .anonymous_load_options(sink)
            .max_metric_series,
        50
    );
    let err = error("pluginMetrics: {maxSeries: 2000000}\n");
    assert_eq!(err.key, "pluginMetrics.maxSeries");
    assert!(err.problem.contains("above the 1000000 allowed"), "{err}");
    let err = error("plugins:\n  chatty:\n    metrics: {maxSeries: 2000000}\n");
    assert_eq!(err.key, "plugins.chatty.metrics.maxSeries");
    let err = error("plugins:\n  chatty:\n    metrics: {series: 5}\n");
    assert_eq!(err.key, "plugins.chatty.metrics.series");
    let err = error("pluginMetrics: {maxSeries: -1}\n");
    assert_eq!(err.key, "pluginMetrics.maxSeries");
}

#[test]
fn inconsistent_values_are_refused() {
    let err = error("limits:\n  default: {callDeadline: 20s, memory: 64Mi}\n");
    assert_eq!(err.key, "limits.default.callDeadline");
    let err = error("plugins:\n  greedy:\n    limits: {memory: 8Gi}\n");
    assert_eq!(err.key, "plugins.greedy.limits.memory");
    let err = error("plugins:\n  Bad_Name: {}\n");
    assert_eq!(err.key, "plugins.Bad_Name");
    let err = error("source:\n  kind: embedded\n  context: prod\n");
    assert_eq!(err.key, "source.kubeconfig");
    let err = error("pluginFiles:\n  allowedSha256: [abc]\n");
    assert_eq!(err.key, "pluginFiles.allowedSha256[0]");
}

#[test]
fn coalesced_queue_keys_default_to_client_go_and_are_checked() {
    let policy = Config::default().retry_policy();
    assert_eq!(policy.coalesced, KeyBackoff::default());
    assert_eq!(
        (
            policy.coalesced.base_delay,
            policy.coalesced.max_delay,
            policy.coalesced.max_retries
        ),
        (Duration::from_millis(5), Duration::from_secs(1000), 15)
    );
    let config = Config::parse(
        "queue:\n  coalesced:\n    baseDelay: 10ms\n    maxRetries: 4\n",
        "herald.yaml",
    )
    .unwrap();
    let coalesced = config.retry_policy().coalesced;
    assert_eq!(
        (
            coalesced.base_delay,
            coalesced.max_delay,
            coalesced.max_retries
        ),
        (Duration::from_millis(10), Duration::from_secs(1000), 4)
    );
    assert_eq!(
        config.retry_policy().max_retries,
        3,
        "every-event keeps its own"
    );

    let err = error("queue:\n  coalesced:\n    baseDelay: 0s\n");
    assert_eq!(err.key, "queue.coalesced.baseDelay");
    let err = error("queue:\n  coalesced:\n    baseDelay: 2s\n    maxDelay: 1s\n");
    assert_eq!(err.key, "queue.coalesced.baseDelay");
    assert!(err.problem.contains("queue.coalesced.maxDelay"), "{err}");
    let err = error("queue:\n  coalesced:\n    maxDelay: soon\n");
    assert_eq!(err.key, "queue.coalesced.maxDelay");
    let err = error("queue:\n  coalesced:\n    retries: 3\n");
    assert_eq!(err.key, "queue.coalesced.retries");
}

#[test]
fn leader_election_is_off_by_default_with_client_go_timings() {
    let config = Config::parse("leaderElection: {}\n", "herald.yaml").unwrap();
    let election = &config.leader_election;
    assert!(!election.enabled);
    assert_eq!(election.lease_name, "herald");
    assert_eq!(election.lease_duration, Duration::from_secs(15));
    assert_eq!(election.renew_deadline, Duration::from_secs(10));
    assert_eq!(election.retry_period, Duration::from_secs(2));
}

#[test]
fn leader_election_timings_that_break_the_protocol_name_the_key() {
    let err = error("leaderElection:\n  leaseDuration: 10s\n  renewDeadline: 10s\n");
    assert_eq!(err.key, "leaderElection.renewDeadline");
    assert!(err.problem.contains("shorter than leaseDuration"), "{err}");
    let err = error("leaderElection:\n  renewDeadline: 10s\n  retryPeriod: 9s\n");
    assert_eq!(err.key, "leaderElection.retryPeriod");
    let err = error("leaderElection:\n  leaseDuration: 1500ms\n  renewDeadline: 1s\n");
    assert_eq!(err.key, "leaderElection.leaseDuration");
    let err = error("leaderElection:\n  retryPeriod: 0s\n");
    assert_eq!(err.key, "leaderElection.retryPeriod");
    let err = error("leaderElection:\n  retryPeriod: often\n");
    assert_eq!(err.key, "leaderElection.retryPeriod");
    assert!(err.problem.contains("not a duration"), "{err}");
}

#[test]
fn sharding_is_off_by_default_and_refused_together_with_leader_election() {
    let config = Config::parse("sharding: {}\n", "herald.yaml").unwrap();
    assert!(!config.sharding.enabled);
    assert_eq!(config.sharding.lease_duration, Duration::from_secs(15));
    let both = error("leaderElection:\n  enabled: true\nsharding:\n  enabled: true\n");
    assert_eq!(both.key, "sharding.enabled");
    assert!(both.problem.contains("leaderElection.enabled"), "{both}");
}

#[test]
fn sharding_settings_are_checked_naming_the_sharding_key() {
    let err = error("sharding:\n  leaseDuration: 10s\n  renewDeadline: 10s\n");
    assert_eq!(err.key, "sharding.renewDeadline");
    let err = error("sharding:\n  leaseName: herald.shard\n");
    assert_eq!(err.key, "sharding.leaseName");
    let long = format!("sharding:\n  leaseName: {}\n", "a".repeat(64));
    assert_eq!(error(&long).key, "sharding.leaseName");
    assert_eq!(error("sharding:\n  replicas: 3\n").key, "sharding.replicas");
    let settings = ShardingConfig {
        identity: Some("pod-a".into()),
        lease_namespace: Some("ops".into()),
        ..ShardingConfig::default()
    }
    .lease_settings("sharding")
    .unwrap();
    assert_eq!(
        (settings.identity.as_str(), settings.namespace.as_str()),
        ("pod-a", "ops")
    );
    let err = ShardingConfig::default()
        .lease_settings_from("sharding", &|_| None, &|_| None)
        .unwrap_err();
    assert_eq!(err.key, "sharding.identity");
}

#[test]
fn leader_election_names_are_checked_and_unknown_keys_refused() {
    assert_eq!(
        error("leaderElection:\n  leaseName: Herald_Lock\n").key,
        "leaderElection.leaseName"
    );
    assert_eq!(
        error("leaderElection:\n  leaseNamespace: kube.system\n").key,
        "leaderElection.leaseNamespace"
    );
    assert_eq!(
        error("leaderElection:\n  identity: \"\"\n").key,
        "leaderElection.identity"
    );
    assert_eq!(
        error("leaderElection:\n  leaseDurationSeconds: 15\n").key,
        "leaderElection.leaseDurationSeconds"
    );
}

#[test]
fn lease_identity_and_namespace_default_from_the_pod() {
    let config = LeaderElectionConfig::default();
    let pod = |name: &str| match name {
        "POD_NAME" => Some("herald-7d9f-abcde".to_owned()),
        "POD_NAMESPACE" => Some("herald-system".to_owned()),
        "HOSTNAME" => Some("node-host".to_owned()),
        _ => None,
    };
    let settings = config
        .lease_settings_from("leaderElection", &pod, &|_| None)
        .unwrap();
    assert_eq!(settings.identity, "herald-7d9f-abcde");
    assert_eq!(settings.namespace, "herald-system");
    assert_eq!(settings.name, "herald");

    let bare = |name: &str| (name == "HOSTNAME").then(|| "laptop".to_owned());
    let token_dir =
        |path: &str| (path == SERVICE_ACCOUNT_NAMESPACE_FILE).then(|| "from-token\n".to_owned());
    let settings = config
        .lease_settings_from("leaderElection", &bare, &token_dir)
        .unwrap();
    assert_eq!(settings.identity, "laptop");
    assert_eq!(settings.namespace, "from-token");

    let settings = config
        .lease_settings_from("leaderElection", &bare, &|_| None)
        .unwrap();
    assert_eq!(settings.namespace, "default");

    let explicit = LeaderElectionConfig {
        identity: Some("replica-1".into()),
        lease_namespace: Some("ops".into()),
        ..LeaderElectionConfig::default()
    };
    let settings = explicit
        .lease_settings_from("leaderElection", &pod, &|_| None)
        .unwrap();
    assert_eq!(
        (settings.identity.as_str(), settings.namespace.as_str()),
        ("replica-1", "ops")
    );

    let err = config
        .lease_settings_from("leaderElection", &|_| None, &|_| None)
        .unwrap_err();
    assert_eq!(err.key, "leaderElection.identity");
}

#[test]
fn an_error_stays_on_one_line_whatever_the_file_holds() {
    // Found by the config fuzz target: serde names an unknown field or
    // variant as written, line breaks included, and the key repeats it.
    let errors = [
        error("limits:\n  default: {callDeadline: 1s, \"mem\\nory\": 64Mi}\n"),
        error("log:\n  format: \"json\\r\\n\"\n"),
        error("plugins:\n  \"bad\\nname\": {}\n"),
        error("log:\n  format: \"\\e[2J\"\n"),
    ];
    assert_eq!(errors[0].key, "limits.default.mem\\nory");
    assert!(errors[0].problem.contains("unknown field `mem\\nory`"));
    assert!(errors[1].problem.contains("unknown variant `json\\r\\n`"));
    assert_eq!(errors[2].key, "plugins.bad\\nname");
    assert!(errors[3].problem.contains("`\\u{1b}[2J`"));
    for err in &errors {
        assert!(!err.to_string().contains(char::is_control), "{err:?}");
    }
}

#[test]
fn a_sidecar_may_lower_a_plugins_api_rate_but_not_raise_it() {
    let rate = |config: &str, sidecar: &str| {
        let settings = Config::parse(config, "herald.yaml")
            .unwrap()
            .plugin_settings();
        let sidecar = settings.parse_sidecar(sidecar, "x.yaml").unwrap();
        let rate = settings.grants_for("x", Some(&sidecar)).rate_limit;
        (rate.qps, rate.burst)
    };
    // Lower than the default (5/s, burst 10): applies.
    assert_eq!(rate("{}", "rateLimit: {qps: 1, burst: 2}\n"), (1.0, 2));
    // Higher: capped at the operator's.
    assert_eq!(
        rate("{}", "rateLimit: {qps: 500, burst: 1000}\n"),
        (5.0, 10)
    );
    assert_eq!(
        rate(
            "plugins:\n  x:\n    rateLimit: {qps: 20, burst: 40}\n",
            "rateLimit: {qps: 50, burst: 4}\n"
        ),
        (20.0, 4)
    );
    // Where sidecars may grant, a sidecar's rate is the operator's word.
    assert_eq!(
        rate(
            "pluginFiles:\n  sidecarGrants: true\n",
            "rateLimit: {qps: 50, burst: 100}\n"
        ),
        (50.0, 100)
    );
}

#[test]
fn a_forbidden_informer_holds_the_replica_unless_configured_otherwise() {
    use crate::readiness::ForbiddenInformers;
    assert_eq!(
        Config::default().readiness.forbidden_informers,
        ForbiddenInformers::HoldReplica
    );
    let config = Config::parse(
        "readiness:\n  forbiddenInformers: hold-plugin\n",
        "herald.yaml",
    )
    .unwrap();
    assert_eq!(
        config.readiness.forbidden_informers,
        ForbiddenInformers::HoldPlugin
    );
    let refused = error("readiness:\n  forbiddenInformers: ignore\n").to_string();
    assert!(
        refused.contains("readiness.forbiddenInformers")
            && refused.contains("hold-replica")
            && refused.contains("hold-plugin"),
        "{refused}"
    );
    let refused = error("readiness:\n  forbidden: hold-plugin\n").to_string();
    assert!(refused.contains("readiness.forbidden"), "{refused}");
}

#[test]
fn an_idle_instance_is_kept_unless_reclaiming_is_asked_for_and_at_least_a_second() {
    let sink: std::sync::Arc<dyn crate::capability::log::LogSink> =
        std::sync::Arc::new(crate::capability::log::MemorySink::default());
    let reclaim = |config: &str, sidecar: Option<&str>| {
        let settings = Config::parse(config, "herald.yaml")
            .unwrap()
            .plugin_settings();
        let sidecar = sidecar.map(|text| settings.parse_sidecar(text, "x.yaml").unwrap());
        settings
            .load_options("x", sidecar.as_ref(), sink.clone())
            .idle
            .reclaim_after
    };
    assert_eq!(reclaim("{}", None), None);
    let minutes = Some(Duration::from_secs(300));
    assert_eq!(
        reclaim("plugins:\n  x:\n    reclaimIdleAfter: 5m\n", None),
        minutes
    );
    assert_eq!(reclaim("{}", Some("reclaimIdleAfter: 5m\n")), minutes);
    assert_eq!(
        reclaim(
            "plugins:\n  x:\n    reclaimIdleAfter: 5m\n",
            Some("reclaimIdleAfter: 1h\n")
        ),
        minutes,
        "the host configuration wins"
    );
    let err = error("plugins:\n  x:\n    reclaimIdleAfter: 100ms\n");
    assert_eq!(err.key, "plugins.x.reclaimIdleAfter");
    assert!(err.problem.contains("at least 1s"), "{err}");
    let settings = Config::parse("{}", "herald.yaml")
        .unwrap()
        .plugin_settings();
    let err = settings
        .parse_sidecar("reclaimIdleAfter: 0s\n", "x.yaml")
        .unwrap_err();
    assert_eq!(err.key, "reclaimIdleAfter");
}

#[test]
fn only_the_operators_entry_decides_whether_admission_is_enforced_or_audited() {
    use crate::capability::{AdmissionMode, Mode};
    let grants = |config: &str, sidecar: &str| {
        let settings = Config::parse(config, "herald.yaml")
            .unwrap()
            .plugin_settings();
        let sidecar = settings.parse_sidecar(sidecar, "x.yaml").unwrap();
        let grants = settings.grants_for("x", Some(&sidecar));
        (grants.mode, grants.admission)
    };
    assert_eq!(grants("{}", "{}"), (Mode::Enforce, AdmissionMode::Enforce));
    // The operator's dry-run audits admission too, unless it says otherwise.
    assert_eq!(
        grants("plugins:\n  x: {mode: dry-run}\n", "{}"),
        (Mode::DryRun, AdmissionMode::Audit)
    );
    assert_eq!(
        grants("plugins:\n  x: {mode: dry-run, admission: enforce}\n", "{}"),
        (Mode::DryRun, AdmissionMode::Enforce)
    );
    assert_eq!(
        grants("plugins:\n  x: {admission: audit}\n", "{}"),
        (Mode::Enforce, AdmissionMode::Audit)
    );
    // A sidecar's dry-run keeps the plugin's writes in the host, and never
    // weakens its policy at the door.
    assert_eq!(
        grants("{}", "mode: dry-run\n"),
        (Mode::DryRun, AdmissionMode::Enforce)
    );
    let refused = Config::parse("plugins:\n  x: {admission: relaxed}\n", "herald.yaml")
        .unwrap_err()
        .to_string();
    assert!(refused.contains("plugins.x.admission"), "{refused}");
}

#[test]
fn clusters_are_named_once_each_and_plugins_run_only_on_configured_ones() {
    let config = Config::parse(
        "source:\n  name: east\nclusters:\n  - name: west\n    kind: kubeconfig\n    kubeconfig: /k\n    context: w\nplugins:\n  fanout:\n    clusters: [east, west]\n    grants:\n      reads:\n        - {kind: ConfigMap, namespaces: [\"*\"], clusters: [west]}\n",
        "herald.yaml",
    )
    .unwrap();
    assert_eq!(config.default_cluster_name(), "east");
    assert_eq!(config.clusters[0].name.as_ref().unwrap().as_str(), "west");
    let settings = config.plugin_settings();
    assert_eq!(settings.reads.default_cluster_name(), "east");
    assert_eq!(
        settings.grants_for("fanout", None).clusters.to_string(),
        "clusters east, west"
    );
    assert_eq!(Config::default().default_cluster_name(), "default");
    // Clusters carry labels, and a plugin may select clusters by them,
    // configured or yet to come.
    let labelled = Config::parse(
        "source:\n  name: east\n  labels: {tier: core}\nclusters:\n  - name: west\n    kind: embedded\n    labels: {tier: edge, region: eu}\nplugins:\n  fanout:\n    clusters: [east, \"tier in (edge)\"]\n",
        "herald.yaml",
    )
    .unwrap();
    assert_eq!(labelled.source.labels["tier"], "core");
    assert_eq!(labelled.clusters[0].labels["region"], "eu");
    for (text, key, says) in [
        (
            "clusters:\n  - kind: embedded\n",
            "clusters[0].name",
            "needs a name",
        ),
        (
            "clusters:\n  - name: West\n    kind: embedded\n",
            "clusters[0].name",
            "West",
        ),
        (
            "clusters:\n  - name: west\n    kind: embedded\n  - name: west\n    kind: embedded\n",
            "clusters[1].name",
            "names two clusters",
        ),
        (
            "clusters:\n  - name: default\n    kind: embedded\n",
            "clusters[0].name",
            "the default cluster's name",
        ),
        (
            "clusters:\n  - name: west\n    kind: in-cluster\n",
            "clusters[0].kind",
            "source names",
        ),
        (
            "clusters:\n  - name: west\n    kind: embedded\n    context: c\n",
            "clusters[0].kubeconfig",
            "need source.kind: kubeconfig",
        ),
        (
            "plugins:\n  p:\n    clusters: [north]\n",
            "plugins.p.clusters",
            "not a configured cluster",
        ),
        (
            "plugins:\n  p:\n    clusters: [\"=edge\"]\n",
            "plugins.p.clusters",
            "not a label selector",
        ),
        (
            "clusters:\n  - name: west\n    kind: embedded\n    labels: {\"-tier\": edge}\n",
            "clusters[0].labels",
            "label key",
        ),
        (
            "plugins:\n  p:\n    grants:\n      writes:\n        - {verbs: [apply], kind: ConfigMap, namespaces: [\"*\"], clusters: [No]}\n",
            "plugins.p.grants.writes",
            "No",
        ),
    ] {
        let refused = error(text).to_string();
        assert!(
            refused.contains(key) && refused.contains(says),
            "{text:?}: {refused}"
        );
    }
}
