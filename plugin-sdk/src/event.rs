//! The notifications a handler receives: [`Event`] for adds and deletes,
//! [`Update`] for updates, both carrying a [`Context`].

use serde::Deserialize;

use crate::frame::{Head, Text};
use crate::view::{ObjectView, decode};
use crate::{Error, GroupVersionKind};

/// Facts about the notification being delivered, as the host sent them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Context {
    /// The subscription's kind.
    pub kind: GroupVersionKind,
    /// The plural resource name the kind resolved to, e.g. `pods`.
    pub resource: String,
    /// The object's key: `namespace/name`, or `name` when cluster-scoped.
    pub key: String,
    /// The `metadata.resourceVersion` of the (new) object.
    pub resource_version: String,
    /// A synthetic add replaying the cache to a plugin that joined (or
    /// re-joined) after the informer had synced.
    pub is_initial_list: bool,
    /// A periodic resync update: old and new are the same state.
    pub is_resync: bool,
    /// A delete inferred from a relist: the object vanished while the watch
    /// was down, and the state passed is the last one the cache knew.
    pub final_state_unknown: bool,
}

impl Context {
    /// The namespace part of the key; `None` for a cluster-scoped object.
    pub fn namespace(&self) -> Option<&str> {
        namespace_of(&self.key)
    }

    /// The name part of the key.
    pub fn name(&self) -> &str {
        name_of(&self.key)
    }
}

/// The namespace part of a key; `None` for a cluster-scoped object's.
fn namespace_of(key: &str) -> Option<&str> {
    key.split_once('/').map(|(namespace, _)| namespace)
}

/// The name part of a key.
fn name_of(key: &str) -> &str {
    key.split_once('/').map_or(key, |(_, name)| name)
}

/// Accessors shared by [`Event`] and [`Update`], forwarding to their context.
macro_rules! context_accessors {
    () => {
        /// Everything the host said about this notification.
        pub fn context(&self) -> &Context {
            self.head.context()
        }

        /// The subscription's kind.
        pub fn kind(&self) -> &GroupVersionKind {
            &self.head.context().kind
        }

        /// The plural resource name, e.g. `pods`.
        pub fn resource(&self) -> &str {
            self.head.resource()
        }

        /// The object's key: `namespace/name`, or `name` when cluster-scoped.
        pub fn key(&self) -> &str {
            self.head.key()
        }

        /// The object's namespace; `None` when cluster-scoped.
        pub fn namespace(&self) -> Option<&str> {
            namespace_of(self.head.key())
        }

        /// The object's name.
        pub fn name(&self) -> &str {
            name_of(self.head.key())
        }

        /// The `metadata.resourceVersion` of the (new) object.
        pub fn resource_version(&self) -> &str {
            self.head.resource_version()
        }

        /// Whether this is a synthetic add replaying the cache on join.
        pub fn is_initial_list(&self) -> bool {
            self.head.is_initial_list()
        }

        /// Whether this is a periodic resync (old and new are equal).
        pub fn is_resync(&self) -> bool {
            self.head.is_resync()
        }

        /// Whether this delete was inferred from a relist, the object being
        /// its last known state (a "final state unknown" tombstone).
        pub fn final_state_unknown(&self) -> bool {
            self.head.final_state_unknown()
        }
    };
}

/// An add (`on_add`) or delete (`on_delete`) notification: a context and the
/// object's JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    head: Head,
    json: Text,
}

impl Event {
    /// An event from its parts; the host builds these, tests may too (see
    /// also `testing::added`).
    pub fn from_parts(context: Context, json: impl Into<String>) -> Self {
        Self::from_text(Head::Built(context), Text::from(json.into()))
    }

    pub(crate) fn from_text(head: Head, json: Text) -> Self {
        Self { head, json }
    }

    context_accessors!();

    /// The object as the JSON text the host sent.
    pub fn json(&self) -> &str {
        self.json.as_str()
    }

    /// The object decoded into `T`: any `k8s-openapi` type (`Pod`,
    /// `Deployment`, ...) or any type deriving `Deserialize`, such as a
    /// struct with only the fields a plugin reads, which may borrow its
    /// strings from the event.
    pub fn object<'a, T: Deserialize<'a>>(&'a self) -> Result<T, Error> {
        decode(self.json(), "the object")
    }

    /// The object read lazily: its metadata now, borrowed, and its spec,
    /// status and other fields when asked for (see [`crate::view`]).
    pub fn view(&self) -> Result<ObjectView<'_>, Error> {
        ObjectView::parse(self.json())
    }
}

/// An update notification (`on_update`): a context and the old and new
/// states' JSON (equal on a resync). The old state is there unless the
/// plugin's [`Handler::OLD_STATE`](crate::Handler::OLD_STATE) declined it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Update {
    head: Head,
    old_json: Option<Text>,
    new_json: Text,
}

impl Update {
    /// An update from its parts; the host builds these, tests may too (see
    /// also `testing::updated`).
    pub fn from_parts(
        context: Context,
        old_json: impl Into<String>,
        new_json: impl Into<String>,
    ) -> Self {
        let old = Text::from(old_json.into());
        Self::from_text(Head::Built(context), Some(old), Text::from(new_json.into()))
    }

    pub(crate) fn from_text(head: Head, old_json: Option<Text>, new_json: Text) -> Self {
        Self {
            head,
            old_json,
            new_json,
        }
    }

    context_accessors!();

    /// The previous state as JSON text; empty when the plugin declined it
    /// ([`Handler::OLD_STATE`](crate::Handler::OLD_STATE)).
    pub fn old_json(&self) -> &str {
        self.old_json.as_ref().map_or("", Text::as_str)
    }

    /// The new state as JSON text.
    pub fn new_json(&self) -> &str {
        self.new_json.as_str()
    }

    /// The previous state decoded into `T` (see [`Event::object`]); an
    /// error when the plugin declined it.
    pub fn old<'a, T: Deserialize<'a>>(&'a self) -> Result<T, Error> {
        decode(self.delivered_old()?, "the old object")
    }

    /// The previous state read lazily (see [`Event::view`]); an error when
    /// the plugin declined it.
    pub fn old_view(&self) -> Result<ObjectView<'_>, Error> {
        ObjectView::read(self.delivered_old()?, "old object")
    }

    fn delivered_old(&self) -> Result<&str, Error> {
        self.old_json.as_ref().map(Text::as_str).ok_or_else(|| {
            Error::new("the old state was not delivered: the plugin's Handler::OLD_STATE is false")
        })
    }

    /// The new state read lazily (see [`Event::view`]).
    pub fn new_view(&self) -> Result<ObjectView<'_>, Error> {
        ObjectView::read(self.new_json(), "new object")
    }

    /// The new state decoded into `T` (see [`Event::object`]).
    #[allow(
        clippy::new_ret_no_self,
        reason = "pairs with `old`: `update.new::<Pod>()` reads as the new state"
    )]
    pub fn new<'a, T: Deserialize<'a>>(&'a self) -> Result<T, Error> {
        decode(self.new_json(), "the new object")
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;
    use serde::Deserialize;

    use super::*;

    fn context(key: &str) -> Context {
        Context {
            kind: GroupVersionKind::new("", "v1", "Pod"),
            resource: "pods".into(),
            key: key.into(),
            resource_version: "42".into(),
            is_initial_list: true,
            is_resync: false,
            final_state_unknown: false,
        }
    }

    const POD: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-0","namespace":"shop","resourceVersion":"42"},"status":{"phase":"Running"}}"#;

    #[test]
    fn key_splits_into_namespace_and_name() {
        let event = Event::from_parts(context("shop/web-0"), POD);
        assert_eq!(event.namespace(), Some("shop"));
        assert_eq!(event.name(), "web-0");
        let cluster_scoped = Event::from_parts(context("node-1"), "{}");
        assert_eq!(cluster_scoped.namespace(), None);
        assert_eq!(cluster_scoped.name(), "node-1");
    }

    #[test]
    fn accessors_forward_the_context() {
        let event = Event::from_parts(context("shop/web-0"), POD);
        assert_eq!(event.kind(), &GroupVersionKind::new("", "v1", "Pod"));
        assert_eq!(event.resource(), "pods");
        assert_eq!(event.key(), "shop/web-0");
        assert_eq!(event.resource_version(), "42");
        assert!(event.is_initial_list());
        assert!(!event.is_resync());
        assert!(!event.final_state_unknown());
        assert_eq!(event.json(), POD);
    }

    #[test]
    fn objects_decode_into_k8s_openapi_types() {
        let pod: Pod = Event::from_parts(context("shop/web-0"), POD)
            .object()
            .unwrap();
        assert_eq!(pod.metadata.name.as_deref(), Some("web-0"));
        assert_eq!(
            pod.status.and_then(|status| status.phase).as_deref(),
            Some("Running")
        );
    }

    #[test]
    fn objects_decode_into_partial_structs() {
        #[derive(Deserialize)]
        struct Named<'a> {
            #[serde(borrow)]
            metadata: Meta<'a>,
        }
        #[derive(Deserialize)]
        struct Meta<'a> {
            name: &'a str,
        }
        let event = Event::from_parts(context("shop/web-0"), POD);
        let named: Named = event.object().unwrap();
        assert_eq!(named.metadata.name, "web-0");
    }

    #[test]
    fn update_decodes_both_sides() {
        let newer = POD.replace("Running", "Succeeded");
        let update = Update::from_parts(context("shop/web-0"), POD, newer.clone());
        assert_eq!(update.old_json(), POD);
        assert_eq!(update.new_json(), newer);
        let phase = |pod: Pod| pod.status.and_then(|status| status.phase).unwrap();
        assert_eq!(phase(update.old().unwrap()), "Running");
        assert_eq!(phase(update.new().unwrap()), "Succeeded");
    }

    #[test]
    fn views_read_each_side_lazily() {
        #[derive(Deserialize)]
        struct Phase<'a> {
            phase: &'a str,
        }
        let newer = POD.replace("Running", "Succeeded");
        let update = Update::from_parts(context("shop/web-0"), POD, newer);
        let (old, new) = (update.old_view().unwrap(), update.new_view().unwrap());
        assert_eq!(old.metadata().name(), "web-0");
        assert_eq!(old.status::<Phase>().unwrap().unwrap().phase, "Running");
        assert_eq!(new.status::<Phase>().unwrap().unwrap().phase, "Succeeded");
        let event = Event::from_parts(context("shop/web-0"), POD);
        assert_eq!(
            event.view().unwrap().metadata().resource_version(),
            Some("42")
        );

        let broken = Update::from_parts(context("shop/web-0"), POD, "[]");
        let error = broken.new_view().unwrap_err();
        assert!(
            error
                .message()
                .starts_with("reading the new object: invalid type"),
            "{error}"
        );
    }

    #[test]
    fn decode_errors_say_what_failed() {
        let event = Event::from_parts(
            context("shop/web-0"),
            r#"{"apiVersion":"apps/v1","kind":"Pod"}"#,
        );
        let error = event.object::<Pod>().unwrap_err();
        assert!(
            error
                .message()
                .starts_with("decoding the object as k8s_openapi::"),
            "{error}"
        );
    }
}
