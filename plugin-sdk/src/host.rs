//! The host's imports as the rest of the SDK calls them: the real imports on
//! wasm, the in-process test host ([`crate::testing`]) everywhere else.

#[cfg(target_arch = "wasm32")]
pub(crate) use wasm::*;

#[cfg(not(target_arch = "wasm32"))]
pub(crate) use crate::testing::host::*;

#[cfg(target_arch = "wasm32")]
mod wasm {
    use crate::GroupVersionKind;
    use crate::bindings::herald::plugin::{cache, config, log};
    use crate::cache::CacheError;
    use crate::log::Level;

    pub(crate) fn log(level: Level, message: &str) {
        let level = match level {
            Level::Trace => log::Level::Trace,
            Level::Debug => log::Level::Debug,
            Level::Info => log::Level::Info,
            Level::Warn => log::Level::Warn,
            Level::Error => log::Level::Error,
        };
        log::log(level, message);
    }

    pub(crate) fn cache_get(
        kind: &GroupVersionKind,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<String>, CacheError> {
        cache::get(&kind.to_wit(), namespace, name).map_err(CacheError::from_wit)
    }

    pub(crate) fn cache_list(
        kind: &GroupVersionKind,
        namespace: Option<&str>,
        label_selector: Option<&str>,
    ) -> Result<Vec<String>, CacheError> {
        cache::list(&kind.to_wit(), namespace, label_selector).map_err(CacheError::from_wit)
    }

    pub(crate) fn config() -> Option<String> {
        config::get()
    }
}
