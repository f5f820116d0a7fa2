//! The plugin's own configuration, set by the operator (the `config` value
//! of its entry in the host configuration, or its sidecar file).
//!
//! ```no_run
//! #[derive(serde::Deserialize, Default)]
//! #[serde(rename_all = "camelCase")]
//! struct Settings {
//!     allowed_registries: Option<Vec<String>>,
//! }
//!
//! # fn main() -> Result<(), herald_sdk::Error> {
//! let settings: Settings = herald_sdk::config::get()?.unwrap_or_default();
//! # Ok(())
//! # }
//! ```

use serde::de::DeserializeOwned;

use crate::Error;

/// The configuration decoded into `T`, or `None` when the operator gave
/// none. Available in [`Handler::manifest`](crate::Handler::manifest) too.
pub fn get<T: DeserializeOwned>() -> Result<Option<T>, Error> {
    raw()
        .map(|json| {
            serde_json::from_str(&json)
                .map_err(|error| Error::from(error).context("decoding the plugin configuration"))
        })
        .transpose()
}

/// The configuration as JSON text, or `None` when the operator gave none.
pub fn raw() -> Option<String> {
    crate::host::config()
}

// The tests run against the native stand-in host.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::testing;

    #[test]
    fn absent_configuration_is_none() {
        testing::reset();
        assert_eq!(get::<BTreeMap<String, u32>>().unwrap(), None);
        assert_eq!(raw(), None);
    }

    #[test]
    fn configuration_decodes_or_explains() {
        testing::reset();
        testing::set_config(r#"{"delayMs": 5}"#);
        assert_eq!(
            get::<BTreeMap<String, u32>>().unwrap().unwrap()["delayMs"],
            5
        );
        testing::set_config(r#"{"delayMs": "soon"}"#);
        let error = get::<BTreeMap<String, u32>>().unwrap_err();
        assert!(
            error
                .message()
                .starts_with("decoding the plugin configuration: "),
            "{error}"
        );
    }
}
