//! The `config` capability: the configuration the operator gave the plugin
//! (`plugins.<name>.config`, or its sidecar's `config`), as JSON text.
//!
//! - **Grant.** Every plugin has it, and sees only its own configuration:
//!   settings are keyed by the plugin's identity (the name its manifest
//!   gives, optionally pinned to digests), never by its file name, so a
//!   file calling itself by another plugin's name gets that plugin's
//!   configuration only if the operator's pins (or signature key) admit it
//!   (see `crate::reload`).
//! - **Dry-run, replay.** No difference; `herald plugin replay --config`
//!   hands the plugin a configuration.

use crate::wit::{v0_1, v0_2};
use wasmtime::component::{HasData, Linker};

/// What the `config` import reaches: the plugin's configuration.
pub struct ConfigHost<'a> {
    /// The operator's configuration for the plugin, JSON text.
    pub config: Option<&'a str>,
}

impl v0_1::herald::plugin::config::Host for ConfigHost<'_> {
    fn get(&mut self) -> Option<String> {
        self.config.map(str::to_owned)
    }
}

impl v0_2::herald::plugin::config::Host for ConfigHost<'_> {
    fn get(&mut self) -> Option<String> {
        self.config.map(str::to_owned)
    }
}

/// The `config` capability, as the list in `capability/mod.rs` names it.
#[derive(Debug)]
pub struct Config;

impl super::factor::Capability for Config {
    const ABOUT: super::factor::About = super::factor::About {
        name: "config",
        wit: "`config` (0.1.0)",
        acts: super::factor::Acts::InsideHost,
    };
    type Stats = ();
    type Plugin = Option<String>;
    type Instance = ();

    fn prepare(setup: &super::Setup<'_>) -> Self::Plugin {
        setup.config.map(str::to_owned)
    }

    fn instantiate(_: &Self::Plugin) {}

    fn host<'a>(
        config: &'a Self::Plugin,
        _: &'a mut (),
        _: super::CallScope<'a>,
    ) -> ConfigHost<'a> {
        ConfigHost {
            config: config.as_deref(),
        }
    }

    /// Links the `config` import of every world version.
    fn add_to_linker<T: super::View + 'static>(
        linker: &mut Linker<T>,
        reach: fn(&mut T) -> ConfigHost<'_>,
    ) -> wasmtime::Result<()> {
        v0_1::herald::plugin::config::add_to_linker::<T, Config>(linker, reach)?;
        v0_2::herald::plugin::config::add_to_linker::<T, Config>(linker, reach)
    }
}

impl HasData for Config {
    type Data<'a> = ConfigHost<'a>;
}
