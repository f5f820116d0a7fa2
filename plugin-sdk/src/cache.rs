//! Read-only look-ups in the host's shared cache (a lister). Only kinds the
//! plugin subscribed to are visible, and only within each subscription's
//! namespace and selectors.
//!
//! ```no_run
//! use herald_sdk::k8s_openapi::api::apps::v1::ReplicaSet;
//! use herald_sdk::cache;
//!
//! # fn main() -> Result<(), herald_sdk::Error> {
//! let replica_sets: Vec<ReplicaSet> = cache::list(Some("shop"), Some("app=web"))?;
//! let one: Option<ReplicaSet> = cache::get(Some("shop"), "web-5d8f7")?;
//! # Ok(())
//! # }
//! ```
//!
//! Look-ups by a label selector scan the objects of the subscription. A
//! plugin that looks objects up by the same thing on every call declares an
//! [`Index`] in its manifest instead (client-go's indexers): the host files
//! every cached object under its value, so [`by_index`] costs the objects
//! it finds, whatever the size of the cache.
//!
//! ```no_run
//! use herald_sdk::cache::{self, Index};
//! use herald_sdk::k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
//! use herald_sdk::{Manifest, Subscription};
//!
//! let manifest = Manifest::new("rollouts", "0.1.0")
//!     .subscribe(Subscription::to::<Deployment>())
//!     .subscribe(Subscription::to::<ReplicaSet>())
//!     .index(Index::by_owner::<ReplicaSet>("owner"));
//!
//! # fn main() -> Result<(), herald_sdk::Error> {
//! // In a handler: the ReplicaSets a Deployment (its UID) owns.
//! let owned: Vec<ReplicaSet> = cache::by_index("owner", "6f1c…", Some("shop"))?;
//! # Ok(())
//! # }
//! ```

use std::fmt;

use k8s_openapi::Resource;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde::de::DeserializeOwned;

use crate::GroupVersionKind;

/// Why a cache look-up failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CacheError {
    /// The plugin did not subscribe to this kind, so it cannot see it.
    NotSubscribed(GroupVersionKind),
    /// The label selector did not parse; the string says why.
    InvalidSelector(String),
    /// The manifest declares no [`Index`] of this name.
    UnknownIndex(String),
    /// A cached object did not decode into the requested type.
    Decode {
        /// The kind looked up.
        kind: GroupVersionKind,
        /// The decoder's complaint.
        message: String,
    },
}

impl CacheError {
    #[cfg(target_arch = "wasm32")]
    pub(crate) fn from_wit(error: crate::bindings::herald::plugin0_2_0::cache::CacheError) -> Self {
        use crate::bindings::herald::plugin0_2_0::cache::CacheError as Wit;
        match error {
            Wit::NotSubscribed(kind) => Self::NotSubscribed(GroupVersionKind::from_wit(kind)),
            Wit::InvalidSelector(why) => Self::InvalidSelector(why),
        }
    }
}

impl fmt::Display for CacheError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotSubscribed(kind) => write!(f, "not subscribed to {kind}"),
            Self::InvalidSelector(why) => write!(f, "invalid label selector: {why}"),
            Self::UnknownIndex(name) => write!(f, "the manifest declares no index named {name:?}"),
            Self::Decode { kind, message } => write!(f, "decoding a cached {kind}: {message}"),
        }
    }
}

impl std::error::Error for CacheError {}

/// The cached object of type `K` named `name` (in `namespace`; `None` for a
/// cluster-scoped kind), or `None` if it is not cached.
pub fn get<K: Resource + DeserializeOwned>(
    namespace: Option<&str>,
    name: &str,
) -> Result<Option<K>, CacheError> {
    get_as(&GroupVersionKind::of::<K>(), namespace, name)
}

/// Every cached object of type `K`, only in `namespace` if given, and only
/// those matching `label_selector` if given (e.g. `app=web,tier!=cache`).
pub fn list<K: Resource + DeserializeOwned>(
    namespace: Option<&str>,
    label_selector: Option<&str>,
) -> Result<Vec<K>, CacheError> {
    list_as(&GroupVersionKind::of::<K>(), namespace, label_selector)
}

/// Like [`get`] for a kind named by strings (a CRD, say), decoded into any
/// `Deserialize` type.
pub fn get_as<T: DeserializeOwned>(
    kind: &GroupVersionKind,
    namespace: Option<&str>,
    name: &str,
) -> Result<Option<T>, CacheError> {
    get_json(kind, namespace, name)?
        .map(|json| decode(kind, &json))
        .transpose()
}

/// Like [`list`] for a kind named by strings, decoded into any `Deserialize`
/// type.
pub fn list_as<T: DeserializeOwned>(
    kind: &GroupVersionKind,
    namespace: Option<&str>,
    label_selector: Option<&str>,
) -> Result<Vec<T>, CacheError> {
    list_json(kind, namespace, label_selector)?
        .iter()
        .map(|json| decode(kind, json))
        .collect()
}

/// The cached object `namespace/name` of `kind` as JSON text, or `None` if
/// it is not cached.
pub fn get_json(
    kind: &GroupVersionKind,
    namespace: Option<&str>,
    name: &str,
) -> Result<Option<String>, CacheError> {
    crate::host::cache_get(kind, namespace, name)
}

/// Every cached object of `kind` (optionally only in `namespace` and only
/// those matching `label_selector`) as JSON texts.
pub fn list_json(
    kind: &GroupVersionKind,
    namespace: Option<&str>,
    label_selector: Option<&str>,
) -> Result<Vec<String>, CacheError> {
    crate::host::cache_list(kind, namespace, label_selector)
}

/// A secondary index of the cache, declared in the manifest with
/// [`Manifest::index`](crate::Manifest::index) and looked up with
/// [`by_index`]. The host keeps it for the informer of its kind (shared
/// with every plugin declaring the same one) and refuses to load a plugin
/// whose index names a kind it does not subscribe to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Index {
    /// The name it is looked up by; unique in the manifest.
    pub name: String,
    /// The kind whose cached objects it files.
    pub kind: GroupVersionKind,
    /// What it files them under.
    pub by: IndexBy,
}

/// What an [`Index`] files each object under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndexBy {
    /// The value of this label; objects without it are not filed.
    Label(String),
    /// The value at this field path (`spec.nodeName`); a string, number or
    /// boolean is filed as its text, anything else is not filed.
    Field(String),
    /// The UID of each owner reference.
    Owner,
}

impl Index {
    /// An index of `kind` by `by`, for a kind named by strings.
    pub fn new(name: impl Into<String>, kind: GroupVersionKind, by: IndexBy) -> Self {
        Index {
            name: name.into(),
            kind,
            by,
        }
    }

    /// Objects of type `K` by the UIDs of their owners: the ReplicaSets of a
    /// Deployment, the Pods of a ReplicaSet.
    pub fn by_owner<K: Resource>(name: impl Into<String>) -> Self {
        Self::new(name, GroupVersionKind::of::<K>(), IndexBy::Owner)
    }

    /// Objects of type `K` by the value of label `key`.
    pub fn by_label<K: Resource>(name: impl Into<String>, key: impl Into<String>) -> Self {
        Self::new(
            name,
            GroupVersionKind::of::<K>(),
            IndexBy::Label(key.into()),
        )
    }

    /// Objects of type `K` by the value at a field path such as
    /// `spec.nodeName`.
    pub fn by_field<K: Resource>(name: impl Into<String>, path: impl Into<String>) -> Self {
        Self::new(
            name,
            GroupVersionKind::of::<K>(),
            IndexBy::Field(path.into()),
        )
    }

    /// The values `json` (an object) is filed under, as the host computes
    /// them (the native test host uses it).
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn values(&self, json: &str) -> Vec<String> {
        let Ok(object) = serde_json::from_str::<serde_json::Value>(json) else {
            return Vec::new();
        };
        let text = |value: &serde_json::Value| match value {
            serde_json::Value::String(text) => Some(text.clone()),
            serde_json::Value::Number(_) | serde_json::Value::Bool(_) => Some(value.to_string()),
            _ => None,
        };
        match &self.by {
            IndexBy::Label(key) => object["metadata"]["labels"]
                .get(key)
                .and_then(text)
                .into_iter()
                .collect(),
            IndexBy::Field(path) => path
                .split('.')
                .try_fold(&object, |value, step| value.get(step))
                .and_then(text)
                .into_iter()
                .collect(),
            IndexBy::Owner => object["metadata"]["ownerReferences"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|owner| owner["uid"].as_str().filter(|uid| !uid.is_empty()))
                .map(str::to_owned)
                .collect(),
        }
    }

    pub(crate) fn into_wit(self) -> crate::bindings::herald::plugin0_3_0::types::IndexDefinition {
        use crate::bindings::herald::plugin0_3_0::types::{IndexBy as Wit, IndexDefinition};
        IndexDefinition {
            name: self.name,
            kind: self.kind.to_wit(),
            by: match self.by {
                IndexBy::Label(key) => Wit::Label(key),
                IndexBy::Field(path) => Wit::Field(path),
                IndexBy::Owner => Wit::Owner,
            },
        }
    }
}

/// The cached objects of type `K` that the manifest's index `name` files
/// under `value` (only in `namespace`, if given), sorted by key
/// (`namespace/name`).
pub fn by_index<K: Resource + DeserializeOwned>(
    name: &str,
    value: &str,
    namespace: Option<&str>,
) -> Result<Vec<K>, CacheError> {
    let kind = GroupVersionKind::of::<K>();
    by_index_json(name, value, namespace)?
        .iter()
        .map(|json| decode(&kind, json))
        .collect()
}

/// Like [`by_index`], as JSON texts.
pub fn by_index_json(
    name: &str,
    value: &str,
    namespace: Option<&str>,
) -> Result<Vec<String>, CacheError> {
    crate::host::cache_by_index(name, value, namespace)
}

/// The label selector string for a `spec.selector` such as a Deployment's,
/// e.g. `app=web,tier in (api,cache)`; `None` when it selects everything.
/// `matchLabels` become `key=value`; `matchExpressions` become `key in (...)`,
/// `key notin (...)`, `key` and `!key`.
pub fn label_selector(selector: &LabelSelector) -> Option<String> {
    let mut requirements: Vec<String> = Vec::new();
    for (key, value) in selector.match_labels.iter().flatten() {
        requirements.push(format!("{key}={value}"));
    }
    for expression in selector.match_expressions.iter().flatten() {
        let values = expression.values.as_deref().unwrap_or_default().join(",");
        let key = &expression.key;
        requirements.push(match expression.operator.as_str() {
            "In" => format!("{key} in ({values})"),
            "NotIn" => format!("{key} notin ({values})"),
            "Exists" => key.clone(),
            "DoesNotExist" => format!("!{key}"),
            other => format!("{key} {other} ({values})"),
        });
    }
    if requirements.is_empty() {
        None
    } else {
        Some(requirements.join(","))
    }
}

fn decode<T: DeserializeOwned>(kind: &GroupVersionKind, json: &str) -> Result<T, CacheError> {
    serde_json::from_str(json).map_err(|error| CacheError::Decode {
        kind: kind.clone(),
        message: error.to_string(),
    })
}

// The tests run against the native stand-in host.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelectorRequirement, ObjectMeta};

    use super::*;
    use crate::testing;

    fn replica_set(namespace: &str, name: &str, app: &str) -> ReplicaSet {
        ReplicaSet {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some(namespace.into()),
                labels: Some([("app".to_owned(), app.to_owned())].into()),
                ..ObjectMeta::default()
            },
            ..ReplicaSet::default()
        }
    }

    #[test]
    fn typed_look_ups_go_through_the_host() {
        testing::reset();
        testing::cache_insert(&replica_set("shop", "web-1", "web"));
        testing::cache_insert(&replica_set("shop", "db-1", "db"));
        testing::cache_insert(&replica_set("blog", "web-2", "web"));

        let found: Option<ReplicaSet> = get(Some("shop"), "web-1").unwrap();
        assert_eq!(found.unwrap().metadata.name.as_deref(), Some("web-1"));
        assert_eq!(get::<ReplicaSet>(Some("blog"), "web-1").unwrap(), None);

        let names = |sets: Vec<ReplicaSet>| {
            sets.into_iter()
                .map(|set| set.metadata.name.unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(list(Some("shop"), Some("app=web")).unwrap()),
            ["web-1"]
        );
        assert_eq!(
            names(list(None, Some("app=web")).unwrap()),
            ["web-2", "web-1"]
        );
        assert_eq!(names(list(Some("shop"), None).unwrap()), ["db-1", "web-1"]);
    }

    #[test]
    fn look_ups_by_a_declared_index_find_what_it_files() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
        testing::reset();
        let owned_by = |mut set: ReplicaSet, uid: &str| {
            set.metadata.owner_references = Some(vec![OwnerReference {
                kind: "Deployment".into(),
                name: "web".into(),
                uid: uid.into(),
                api_version: "apps/v1".into(),
                ..OwnerReference::default()
            }]);
            set
        };
        testing::cache_insert(&owned_by(replica_set("shop", "web-1", "web"), "u-1"));
        testing::cache_insert(&owned_by(replica_set("shop", "web-2", "web"), "u-1"));
        testing::cache_insert(&owned_by(replica_set("blog", "web-3", "web"), "u-2"));
        testing::cache_insert(&replica_set("shop", "db-1", "db"));
        let manifest = crate::Manifest::new("p", "1")
            .subscribe(crate::Subscription::to::<ReplicaSet>())
            .index(Index::by_owner::<ReplicaSet>("owner"))
            .index(Index::by_label::<ReplicaSet>("app", "app"))
            .index(Index::by_field::<ReplicaSet>(
                "namespace",
                "metadata.namespace",
            ));
        assert!(
            by_index::<ReplicaSet>("owner", "u-1", None)
                .is_err_and(|e| matches!(e, CacheError::UnknownIndex(_))),
            "not declared yet"
        );
        testing::declare(&manifest);
        let names = |found: Result<Vec<ReplicaSet>, CacheError>| {
            found
                .unwrap()
                .into_iter()
                .map(|set| set.metadata.name.unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(by_index("owner", "u-1", None)), ["web-1", "web-2"]);
        assert_eq!(
            names(by_index("owner", "u-2", Some("shop"))),
            Vec::<String>::new()
        );
        assert_eq!(names(by_index("app", "db", None)), ["db-1"]);
        assert_eq!(names(by_index("namespace", "blog", None)), ["web-3"]);
        assert_eq!(
            by_index::<ReplicaSet>("nodes", "n", None)
                .unwrap_err()
                .to_string(),
            "the manifest declares no index named \"nodes (the test host knows the indexes of the manifest given to testing::declare)\""
        );
    }

    #[test]
    fn unsubscribed_kinds_and_bad_selectors_fail() {
        testing::reset();
        testing::subscribe(GroupVersionKind::of::<Pod>());
        let error = list::<Deployment>(None, None).unwrap_err();
        assert_eq!(
            error,
            CacheError::NotSubscribed(GroupVersionKind::of::<Deployment>())
        );
        assert_eq!(error.to_string(), "not subscribed to apps/v1/Deployment");
        assert!(
            list::<Pod>(None, Some("a=b=c"))
                .is_err_and(|error| matches!(error, CacheError::InvalidSelector(_)))
        );
        assert_eq!(list::<Pod>(None, None).unwrap(), []);
    }

    #[test]
    fn decode_failures_name_the_kind() {
        testing::reset();
        let kind = GroupVersionKind::new("example.com", "v1", "Widget");
        testing::cache_insert_json(
            kind.clone(),
            r#"{"metadata":{"name":"w","namespace":"n"},"spec":7}"#,
        );
        #[derive(serde::Deserialize, Debug)]
        struct Widget {
            #[allow(dead_code)]
            spec: String,
        }
        let error = get_as::<Widget>(&kind, Some("n"), "w").unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("decoding a cached example.com/v1/Widget: "),
            "{error}"
        );
        assert_eq!(
            get_json(&kind, Some("n"), "w").unwrap().unwrap(),
            r#"{"metadata":{"name":"w","namespace":"n"},"spec":7}"#
        );
    }

    #[test]
    fn selectors_render_labels_then_expressions() {
        let requirement = |key: &str, operator: &str, values: &[&str]| LabelSelectorRequirement {
            key: key.into(),
            operator: operator.into(),
            values: Some(values.iter().map(|value| (*value).to_owned()).collect()),
        };
        let selector = LabelSelector {
            match_labels: Some(
                [
                    ("app".to_owned(), "web".to_owned()),
                    ("tier".to_owned(), "front".to_owned()),
                ]
                .into(),
            ),
            match_expressions: Some(vec![
                requirement("env", "In", &["prod", "staging"]),
                requirement("track", "NotIn", &["canary"]),
                requirement("owner", "Exists", &[]),
                requirement("legacy", "DoesNotExist", &[]),
            ]),
        };
        assert_eq!(
            label_selector(&selector).as_deref(),
            Some("app=web,tier=front,env in (prod,staging),track notin (canary),owner,!legacy")
        );
        assert_eq!(label_selector(&LabelSelector::default()), None);
    }
}
