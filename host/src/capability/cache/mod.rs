//! The `cache` capability, and index look-ups: read-only look-ups in the
//! shared cache (a lister), answered from the informers' stores.
//!
//! - **Grant.** A plugin looks up only what it subscribed to: the kinds,
//!   namespaces and selectors of its subscriptions, each of which the
//!   operator's read grant had to cover for the plugin to load
//!   ([`crate::capability::reads`]). Anything else answers `not-subscribed`.
//!   Index look-ups ([`IndexDefinition`]) use only the indexes the manifest
//!   declares, each on a subscribed kind; another name answers
//!   `unknown-index`.
//! - **Bounds.** An answer counts against the instance's memory cap before
//!   it is built: one that would not fit is a memory-limit fault, never an
//!   allocation. A look-up costs the objects found (indexes) or a scan of
//!   one namespace's range of keys (listings).
//! - **Dry-run.** No difference: reading the cache has no effect outside
//!   the host.
//! - **Replay.** `herald plugin replay` answers look-ups from an in-memory
//!   cache filled by the recorded events.

mod host;
mod index;
mod scope;

pub use host::CacheHost;
pub use index::{IndexDefinition, IndexError};
pub use scope::{CacheScope, LookupError};

/// The `cache` capability, as the list in `capability/mod.rs` names it.
#[derive(Debug)]
pub struct Cache;

impl super::factor::Capability for Cache {
    const ABOUT: super::factor::About = super::factor::About {
        name: "cache",
        wit: "`cache` (0.1.0), `index` (0.3.0)",
        acts: super::factor::Acts::InsideHost,
    };
    type Stats = ();
    type Plugin = std::sync::Arc<CacheScope>;
    type Instance = ();

    fn prepare(setup: &super::Setup<'_>) -> Self::Plugin {
        setup.cache.clone()
    }

    fn instantiate(_: &Self::Plugin) {}

    fn host<'a>(
        scope: &'a Self::Plugin,
        _: &'a mut (),
        call: super::CallScope<'a>,
    ) -> CacheHost<'a> {
        CacheHost { scope, call }
    }

    fn add_to_linker<T: super::View + 'static>(
        linker: &mut wasmtime::component::Linker<T>,
        reach: fn(&mut T) -> CacheHost<'_>,
    ) -> wasmtime::Result<()> {
        host::add_to_linker(linker, reach)
    }
}

impl wasmtime::component::HasData for Cache {
    type Data<'a> = CacheHost<'a>;
}
