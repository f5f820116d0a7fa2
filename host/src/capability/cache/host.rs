//! The `cache` import of every world version and 0.3.0's `index` import, on
//! the plugin's [`CacheScope`].

use super::scope::{CacheScope, LookupError};
use crate::capability::CallScope;
use crate::gvk::Gvk;
use crate::store::CachedObject;
use crate::wit::{v0_1, v0_2, v0_3};
use std::sync::Arc;
use wasmtime::component::Linker;

/// What the `cache` and `index` imports reach: the plugin's window on the
/// cache, and the call's memory budget for answers.
pub struct CacheHost<'a> {
    /// The plugin's cache look-ups.
    pub scope: &'a CacheScope,
    /// The call under way.
    pub call: CallScope<'a>,
}

/// Links `cache` (every world version) and `index` (0.3.0 and later); `reach`
/// finds what they reach in the store's state.
pub(super) fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    reach: fn(&mut T) -> CacheHost<'_>,
) -> wasmtime::Result<()> {
    v0_1::herald::plugin::cache::add_to_linker::<T, super::Cache>(linker, reach)?;
    v0_2::herald::plugin::cache::add_to_linker::<T, super::Cache>(linker, reach)?;
    v0_3::herald::plugin0_3_0::index::add_to_linker::<T, super::Cache>(linker, reach)
}

type Answer<T, E> = wasmtime::Result<Result<T, E>>;

impl CacheHost<'_> {
    /// One object's JSON, charged to the instance's memory budget (a trap if
    /// it does not fit).
    fn get(
        &mut self,
        kind: Gvk,
        namespace: Option<&str>,
        name: &str,
    ) -> Answer<Option<String>, LookupError> {
        match self
            .scope
            .get(self.call.cluster.target(), &kind, namespace, name)
        {
            Ok(Some(object)) => {
                self.call.budget.reserve(object.json().len())?;
                Ok(Ok(Some(object.json().to_owned())))
            }
            Ok(None) => Ok(Ok(None)),
            Err(err) => Ok(Err(err)),
        }
    }

    fn list(
        &mut self,
        kind: Gvk,
        namespace: Option<&str>,
        selector: Option<&str>,
    ) -> Answer<Vec<String>, LookupError> {
        match self
            .scope
            .list(self.call.cluster.target(), &kind, namespace, selector)
        {
            Ok(objects) => self.answer(&objects).map(Ok),
            Err(err) => Ok(Err(err)),
        }
    }

    /// The JSON texts of `objects` for the guest, once the instance's memory
    /// budget has room for all of them (a trap otherwise).
    fn answer(&mut self, objects: &[Arc<CachedObject>]) -> wasmtime::Result<Vec<String>> {
        let bytes = objects
            .iter()
            .map(|object| object.json().len() + std::mem::size_of::<String>())
            .sum();
        self.call.budget.reserve(bytes)?;
        Ok(objects
            .iter()
            .map(|object| object.json().to_owned())
            .collect())
    }
}

/// The `cache` import of one world version, whose records are its own.
macro_rules! cache_host {
    ($version:ident) => {
        impl $version::herald::plugin::cache::Host for CacheHost<'_> {
            fn get(
                &mut self,
                kind: $version::herald::plugin::types::GroupVersionKind,
                namespace: Option<String>,
                name: String,
            ) -> Answer<Option<String>, $version::herald::plugin::cache::CacheError> {
                let gvk = Gvk::new(kind.group, kind.version, kind.kind);
                Ok(
                    CacheHost::get(self, gvk, namespace.as_deref(), &name)?.map_err(|e| {
                        use $version::herald::plugin::{
                            cache::CacheError, types::GroupVersionKind,
                        };
                        match e {
                            LookupError::NotSubscribed(gvk) => {
                                CacheError::NotSubscribed(GroupVersionKind {
                                    group: gvk.group,
                                    version: gvk.version,
                                    kind: gvk.kind,
                                })
                            }
                            other => CacheError::InvalidSelector(other.to_string()),
                        }
                    }),
                )
            }

            fn list(
                &mut self,
                kind: $version::herald::plugin::types::GroupVersionKind,
                namespace: Option<String>,
                label_selector: Option<String>,
            ) -> Answer<Vec<String>, $version::herald::plugin::cache::CacheError> {
                let gvk = Gvk::new(kind.group, kind.version, kind.kind);
                let answer =
                    CacheHost::list(self, gvk, namespace.as_deref(), label_selector.as_deref())?;
                Ok(answer.map_err(|e| {
                    use $version::herald::plugin::{cache::CacheError, types::GroupVersionKind};
                    match e {
                        LookupError::NotSubscribed(gvk) => {
                            CacheError::NotSubscribed(GroupVersionKind {
                                group: gvk.group,
                                version: gvk.version,
                                kind: gvk.kind,
                            })
                        }
                        LookupError::InvalidSelector(reason) => CacheError::InvalidSelector(reason),
                        // `list` names no index.
                        other => CacheError::InvalidSelector(other.to_string()),
                    }
                }))
            }
        }
    };
}

cache_host!(v0_1);
cache_host!(v0_2);

impl v0_3::herald::plugin0_3_0::index::Host for CacheHost<'_> {
    fn lookup(
        &mut self,
        name: String,
        value: String,
        namespace: Option<String>,
    ) -> Answer<Vec<String>, v0_3::herald::plugin0_3_0::index::IndexError> {
        use v0_3::herald::plugin0_3_0::index::IndexError;
        match self.scope.by_index(
            self.call.cluster.target(),
            &name,
            &value,
            namespace.as_deref(),
        ) {
            Ok(objects) => self.answer(&objects).map(Ok),
            Err(LookupError::UnknownIndex(name)) => Ok(Err(IndexError::UnknownIndex(name))),
            // A declared index names a subscribed kind, and no selector.
            Err(other) => Ok(Err(IndexError::UnknownIndex(other.to_string()))),
        }
    }
}
