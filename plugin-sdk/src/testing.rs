//! An in-process stand-in for the host, for unit-testing plugins on the
//! native target (`cargo test`). Off wasm, the SDK's log, cache and config
//! calls land here instead of in the host.
//!
//! State is per thread (each `#[test]` runs on its own thread); call
//! [`reset`] at the start of a test that reuses a thread.
//!
//! ```
//! use herald_sdk::k8s_openapi::api::core::v1::Pod;
//! use herald_sdk::{testing, Handler};
//!
//! #[derive(Default)]
//! struct Counter(u32);
//!
//! impl Handler for Counter {
//!     fn manifest() -> herald_sdk::Manifest {
//!         herald_sdk::Manifest::new("counter", "1")
//!     }
//!
//!     fn on_add(&mut self, event: &herald_sdk::Event) -> Result<(), herald_sdk::Error> {
//!         self.0 += 1;
//!         herald_sdk::info!("counted key={} total={}", event.key(), self.0);
//!         Ok(())
//!     }
//! }
//!
//! let mut pod = Pod::default();
//! pod.metadata.name = Some("web-0".into());
//! pod.metadata.namespace = Some("shop".into());
//! let mut counter = Counter::default();
//! counter.on_add(&testing::added(&pod)).unwrap();
//! assert_eq!(testing::take_messages(), ["counted key=shop/web-0 total=1"]);
//! ```

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::Resource;
use serde::Serialize;
use serde_json::Value;

use crate::log::Level;
use crate::{Context, Event, GroupVersionKind, Update};

/// One line a plugin logged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogLine {
    /// Its severity.
    pub level: Level,
    /// Its text.
    pub message: String,
}

/// Objects of one kind by (namespace, name), holding JSON text.
type Objects = BTreeMap<(Option<String>, String), String>;

#[derive(Default)]
struct TestHost {
    config: Option<String>,
    logs: Vec<LogLine>,
    subscribed: BTreeSet<GroupVersionKind>,
    cache: BTreeMap<GroupVersionKind, Objects>,
}

thread_local! {
    static HOST: RefCell<TestHost> = RefCell::default();
}

fn with_host<R>(f: impl FnOnce(&mut TestHost) -> R) -> R {
    HOST.with(|host| f(&mut host.borrow_mut()))
}

/// Forgets this thread's configuration, logs and cache.
pub fn reset() {
    with_host(|host| *host = TestHost::default());
}

/// Sets the configuration `config::get` returns (JSON text).
pub fn set_config(json: impl Into<String>) {
    with_host(|host| host.config = Some(json.into()));
}

/// Removes the configuration: `config::get` returns `None`.
pub fn clear_config() {
    with_host(|host| host.config = None);
}

/// Every line logged since the last [`take_logs`], removed.
pub fn take_logs() -> Vec<LogLine> {
    with_host(|host| std::mem::take(&mut host.logs))
}

/// The text of every line logged since the last take, removed.
pub fn take_messages() -> Vec<String> {
    take_logs().into_iter().map(|line| line.message).collect()
}

/// Makes `kind` visible to cache look-ups, as subscribing to it would.
/// Kinds never subscribed to fail with `CacheError::NotSubscribed`.
pub fn subscribe(kind: GroupVersionKind) {
    with_host(|host| host.subscribed.insert(kind));
}

/// Puts `object` in the cache (replacing one with the same namespace and
/// name) and subscribes to its kind.
pub fn cache_insert<K: Resource + Serialize>(object: &K) {
    cache_insert_json(GroupVersionKind::of::<K>(), to_json(object));
}

/// Puts an object given as JSON text in the cache under `kind`, keyed by its
/// `metadata.namespace` and `metadata.name`, and subscribes to `kind`.
pub fn cache_insert_json(kind: GroupVersionKind, json: impl Into<String>) {
    let json = json.into();
    let (namespace, name, _) = identity(&json);
    with_host(|host| {
        host.subscribed.insert(kind.clone());
        host.cache
            .entry(kind)
            .or_default()
            .insert((namespace, name), json);
    });
}

/// Removes `namespace/name` of type `K` from the cache.
pub fn cache_remove<K: Resource>(namespace: Option<&str>, name: &str) {
    with_host(|host| {
        if let Some(objects) = host.cache.get_mut(&GroupVersionKind::of::<K>()) {
            objects.remove(&(namespace.map(str::to_owned), name.to_owned()));
        }
    });
}

/// The context the host would send with `object`: its kind, resource, key
/// and resource version; no flags set.
pub fn context_for<K: Resource + Serialize>(object: &K) -> Context {
    context_for_json(
        GroupVersionKind::of::<K>(),
        K::URL_PATH_SEGMENT,
        &to_json(object),
    )
}

/// The context the host would send with an object given as JSON text.
pub fn context_for_json(kind: GroupVersionKind, resource: &str, json: &str) -> Context {
    let (namespace, name, resource_version) = identity(json);
    Context {
        kind,
        resource: resource.to_owned(),
        key: namespace.map_or_else(|| name.clone(), |namespace| format!("{namespace}/{name}")),
        resource_version,
        is_initial_list: false,
        is_resync: false,
        final_state_unknown: false,
    }
}

/// The event `on_add` would receive for `object`.
pub fn added<K: Resource + Serialize>(object: &K) -> Event {
    Event::from_parts(context_for(object), to_json(object))
}

/// The event `on_update` would receive for a change from `old` to `new`.
pub fn updated<K: Resource + Serialize>(old: &K, new: &K) -> Update {
    Update::from_parts(context_for(new), to_json(old), to_json(new))
}

/// The event `on_delete` would receive for `object`.
pub fn deleted<K: Resource + Serialize>(object: &K) -> Event {
    Event::from_parts(context_for(object), to_json(object))
}

/// The add replaying `object` to a plugin that joined after the informer
/// synced ([`Event::is_initial_list`] set).
pub fn listed<K: Resource + Serialize>(object: &K) -> Event {
    let context = Context {
        is_initial_list: true,
        ..context_for(object)
    };
    Event::from_parts(context, to_json(object))
}

/// The periodic resync update for `object` ([`Update::is_resync`] set, old
/// and new equal).
pub fn resynced<K: Resource + Serialize>(object: &K) -> Update {
    let context = Context {
        is_resync: true,
        ..context_for(object)
    };
    Update::from_parts(context, to_json(object), to_json(object))
}

/// The delete inferred from a relist, `object` being the last known state
/// ([`Event::final_state_unknown`] set).
pub fn vanished<K: Resource + Serialize>(object: &K) -> Event {
    let context = Context {
        final_state_unknown: true,
        ..context_for(object)
    };
    Event::from_parts(context, to_json(object))
}

fn to_json<K: Serialize>(object: &K) -> String {
    serde_json::to_string(object).expect("a Kubernetes object serializes to JSON")
}

/// `metadata.namespace`, `metadata.name` and `metadata.resourceVersion`.
fn identity(json: &str) -> (Option<String>, String, String) {
    let value: Value = serde_json::from_str(json).expect("test objects must be JSON");
    let field = |name: &str| {
        value
            .pointer(&format!("/metadata/{name}"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    (
        field("namespace"),
        field("name").unwrap_or_default(),
        field("resourceVersion").unwrap_or_default(),
    )
}

/// One requirement of a label selector.
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
}

impl Requirement {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Self::Equals(key, value) => labels.get(key) == Some(value),
            Self::NotEquals(key, value) => labels.get(key) != Some(value),
            Self::In(key, values) => labels.get(key).is_some_and(|value| values.contains(value)),
            Self::NotIn(key, values) => labels.get(key).is_none_or(|value| !values.contains(value)),
            Self::Exists(key) => labels.contains_key(key),
            Self::DoesNotExist(key) => !labels.contains_key(key),
        }
    }
}

/// Parses the Kubernetes label selector grammar (`a=b`, `a==b`, `a!=b`,
/// `a in (x,y)`, `a notin (x)`, `a`, `!a`, joined by commas).
fn parse_selector(selector: &str) -> Result<Vec<Requirement>, String> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (index, character) in selector.char_indices() {
        match character {
            '(' => depth += 1,
            ')' => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| format!("unbalanced ')' in {selector:?}"))?
            }
            ',' if depth == 0 => {
                parts.push(&selector[start..index]);
                start = index + 1;
            }
            _ => {}
        }
    }
    parts.push(&selector[start..]);
    let valid = |word: &str| {
        !word.is_empty()
            && word
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
    };
    let check = |word: &str| {
        if valid(word) {
            Ok(word.to_owned())
        } else {
            Err(format!("invalid label key or value {word:?}"))
        }
    };
    let set = |values: &str| -> Result<Vec<String>, String> {
        let inner = values
            .trim()
            .strip_prefix('(')
            .and_then(|rest| rest.strip_suffix(')'));
        let inner = inner.ok_or_else(|| format!("expected a parenthesised set, got {values:?}"))?;
        inner.split(',').map(|value| check(value.trim())).collect()
    };
    parts
        .into_iter()
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(|part| {
            if let Some((key, value)) = part.split_once("!=") {
                Ok(Requirement::NotEquals(
                    check(key.trim())?,
                    check(value.trim())?,
                ))
            } else if let Some((key, value)) =
                part.split_once("==").or_else(|| part.split_once('='))
            {
                Ok(Requirement::Equals(
                    check(key.trim())?,
                    check(value.trim())?,
                ))
            } else if let Some((key, values)) = part.split_once(" notin ") {
                Ok(Requirement::NotIn(check(key.trim())?, set(values)?))
            } else if let Some((key, values)) = part.split_once(" in ") {
                Ok(Requirement::In(check(key.trim())?, set(values)?))
            } else if let Some(key) = part.strip_prefix('!') {
                Ok(Requirement::DoesNotExist(check(key.trim())?))
            } else {
                Ok(Requirement::Exists(check(part)?))
            }
        })
        .collect()
}

fn labels_of(json: &str) -> BTreeMap<String, String> {
    let value: Value = serde_json::from_str(json).unwrap_or_default();
    value
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|labels| {
            labels
                .iter()
                .filter_map(|(key, value)| Some((key.clone(), value.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

/// What the SDK calls off wasm in place of the host's imports.
pub(crate) mod host {
    use super::*;
    use crate::cache::CacheError;

    pub(crate) fn log(level: Level, message: &str) {
        with_host(|host| {
            host.logs.push(LogLine {
                level,
                message: message.to_owned(),
            })
        });
    }

    pub(crate) fn config() -> Option<String> {
        with_host(|host| host.config.clone())
    }

    fn visible(host: &TestHost, kind: &GroupVersionKind) -> Result<(), CacheError> {
        if host.subscribed.contains(kind) {
            Ok(())
        } else {
            Err(CacheError::NotSubscribed(kind.clone()))
        }
    }

    pub(crate) fn cache_get(
        kind: &GroupVersionKind,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<String>, CacheError> {
        with_host(|host| {
            visible(host, kind)?;
            let key = (namespace.map(str::to_owned), name.to_owned());
            Ok(host
                .cache
                .get(kind)
                .and_then(|objects| objects.get(&key))
                .cloned())
        })
    }

    pub(crate) fn cache_list(
        kind: &GroupVersionKind,
        namespace: Option<&str>,
        label_selector: Option<&str>,
    ) -> Result<Vec<String>, CacheError> {
        let requirements = parse_selector(label_selector.unwrap_or_default())
            .map_err(CacheError::InvalidSelector)?;
        with_host(|host| {
            visible(host, kind)?;
            let objects = host.cache.get(kind).into_iter().flatten();
            Ok(objects
                .filter(|((object_namespace, _), _)| {
                    namespace.is_none() || object_namespace.as_deref() == namespace
                })
                .filter(|(_, json)| {
                    let labels = labels_of(json);
                    requirements
                        .iter()
                        .all(|requirement| requirement.matches(&labels))
                })
                .map(|(_, json)| json.clone())
                .collect())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(selector: &str, labels: &[(&str, &str)]) -> bool {
        let labels = labels
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect();
        parse_selector(selector)
            .unwrap()
            .iter()
            .all(|requirement| requirement.matches(&labels))
    }

    #[test]
    fn selector_grammar() {
        let labels = [("app", "web"), ("tier", "front")];
        assert!(matches("", &labels));
        assert!(matches("app=web", &labels));
        assert!(matches("app==web,tier!=back", &labels));
        assert!(!matches("app=web,tier=back", &labels));
        assert!(matches("tier in (front, back),app notin (db)", &labels));
        assert!(!matches("tier notin (front)", &labels));
        assert!(matches("app,!legacy", &labels));
        assert!(!matches("!app", &labels));
        assert!(parse_selector("a=b=c").is_err());
        assert!(parse_selector("a in x").is_err());
        assert!(parse_selector("a in (x").is_err());
    }

    #[test]
    fn contexts_come_from_metadata() {
        let json = r#"{"metadata":{"name":"node-1","resourceVersion":"9"}}"#;
        let context = context_for_json(GroupVersionKind::new("", "v1", "Node"), "nodes", json);
        assert_eq!(context.key, "node-1");
        assert_eq!(context.resource_version, "9");
        assert_eq!(context.resource, "nodes");
        let json = r#"{"metadata":{"name":"web-0","namespace":"shop"}}"#;
        assert_eq!(
            context_for_json(GroupVersionKind::new("", "v1", "Pod"), "pods", json).key,
            "shop/web-0"
        );
    }
}
