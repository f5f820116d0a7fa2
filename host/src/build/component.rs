//! A core module made a plugin component: the type of the world
//! `herald:plugin/plugin@0.7.0` embedded as the `component-type` custom
//! section (what `wasm-tools component embed` writes), then wrapped with
//! wit-component and the WASI preview1 *reactor* adapter (what `wasm-tools
//! component new --adapt` does).
//!
//! The WIT is the repository's `wit/0.7.0`, compiled into the binary, so a
//! build needs no checkout and no other tool. The reactor adapter, not the
//! command one: a plugin is a library whose exports the host calls, and the
//! reactor's component runs the module's `_initialize` (the Go runtime and
//! every package's `init`) when it is instantiated.

/// The world Go plugins are built against: 0.7.0, whose `delivery` export
/// hands the Go SDK its notifications as frames of bytes, and whose
/// `admission` export (0.5.0's) the SDK answers for every plugin (declaring
/// no webhooks unless the manifest does). Go links only the imports a
/// plugin calls, so one that never asks for its cluster imports no 0.6.0
/// interface and the host runs it on the default cluster alone. Plugins
/// built against older worlds still load: the host runs every released one.
pub const WORLD: &str = "herald:plugin/plugin@0.7.0";
use thiserror::Error;
use wasi_preview1_component_adapter_provider::{
    WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME, WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
};
use wit_component::{ComponentEncoder, StringEncoding};
use wit_parser::Resolve;

/// The WIT packages of [`WORLD`], each after the packages it uses: the
/// files of `wit/0.7.0` and its `deps/` (links to the released 0.6.0,
/// 0.5.0, 0.4.0, 0.3.0 and 0.2.0 packages and their WASI dependencies), as
/// (path, text).
const PACKAGES: &[(&str, &str)] = &[
    (
        "wit/0.7.0/deps/wasi-io/io.wit",
        include_str!("../../../wit/0.7.0/deps/wasi-io/io.wit"),
    ),
    (
        "wit/0.7.0/deps/wasi-clocks/clocks.wit",
        include_str!("../../../wit/0.7.0/deps/wasi-clocks/clocks.wit"),
    ),
    (
        "wit/0.7.0/deps/wasi-random/random.wit",
        include_str!("../../../wit/0.7.0/deps/wasi-random/random.wit"),
    ),
    (
        "wit/0.7.0/deps/wasi-filesystem/filesystem.wit",
        include_str!("../../../wit/0.7.0/deps/wasi-filesystem/filesystem.wit"),
    ),
    (
        "wit/0.7.0/deps/wasi-sockets/sockets.wit",
        include_str!("../../../wit/0.7.0/deps/wasi-sockets/sockets.wit"),
    ),
    (
        "wit/0.7.0/deps/wasi-cli/cli.wit",
        include_str!("../../../wit/0.7.0/deps/wasi-cli/cli.wit"),
    ),
    (
        "wit/0.7.0/deps/wasi-http/http.wit",
        include_str!("../../../wit/0.7.0/deps/wasi-http/http.wit"),
    ),
    (
        "wit/0.7.0/deps/herald-plugin-0.2.0/herald.wit",
        include_str!("../../../wit/0.7.0/deps/herald-plugin-0.2.0/herald.wit"),
    ),
    (
        "wit/0.7.0/deps/herald-plugin-0.3.0/herald.wit",
        include_str!("../../../wit/0.7.0/deps/herald-plugin-0.3.0/herald.wit"),
    ),
    (
        "wit/0.7.0/deps/herald-plugin-0.4.0/herald.wit",
        include_str!("../../../wit/0.7.0/deps/herald-plugin-0.4.0/herald.wit"),
    ),
    (
        "wit/0.7.0/deps/herald-plugin-0.5.0/herald.wit",
        include_str!("../../../wit/0.7.0/deps/herald-plugin-0.5.0/herald.wit"),
    ),
    (
        "wit/0.7.0/deps/herald-plugin-0.6.0/herald.wit",
        include_str!("../../../wit/0.7.0/deps/herald-plugin-0.6.0/herald.wit"),
    ),
    (
        "wit/0.7.0/herald.wit",
        include_str!("../../../wit/0.7.0/herald.wit"),
    ),
];

/// The exports a core module needs before it is worth componentizing: the
/// reactor's initializer, the world's own (the manifest), the first of
/// 0.5.0's and 0.7.0's `deliver` (one without either was built with an
/// older SDK); the other functions are checked by wit-component.
const REQUIRED_EXPORTS: &[(&str, &str)] = &[
    (
        "_initialize",
        "build it with -buildmode=c-shared (a reactor), not as a command",
    ),
    (
        "manifest",
        "its main package must import herald.dev/sdk/go and call herald.Register from an init function",
    ),
    (
        "herald:plugin/admission@0.5.0#declare",
        "its herald.dev/sdk/go predates world 0.5.0 (admission): build it with the SDK of this Herald's checkout (the `replace` directive in go.mod)",
    ),
    (
        "herald:plugin/delivery@0.7.0#deliver",
        "its herald.dev/sdk/go predates world 0.7.0 (delivery): build it with the SDK of this Herald's checkout (the `replace` directive in go.mod)",
    ),
];

/// Why a core module did not become a component.
#[derive(Debug, Error)]
pub enum ComponentError {
    /// The embedded WIT did not resolve (a broken build of Herald).
    #[error("the embedded WIT of {WORLD} does not resolve: {0:#}")]
    Wit(anyhow::Error),
    /// The module is not WebAssembly, or not a plugin's.
    #[error("the core module is not a Herald plugin: it exports no `{export}`: {advice}")]
    MissingExport {
        /// The export looked for.
        export: &'static str,
        /// What the author should change.
        advice: &'static str,
    },
    /// The module could not be read.
    #[error("the core module is not valid WebAssembly: {0}")]
    NotWasm(String),
    /// wit-component refused it: the module's imports or exports do not
    /// match the world (its message names the function at fault).
    #[error("componentizing against {WORLD}: {0:#}")]
    Encode(anyhow::Error),
}

/// The resolved WIT of [`WORLD`] and the world's id in it.
fn world() -> Result<(Resolve, wit_parser::WorldId), ComponentError> {
    let mut resolve = Resolve::default();
    let mut main = None;
    for (path, text) in PACKAGES {
        main = Some(
            resolve
                .push_source(path, text)
                .map_err(ComponentError::Wit)?,
        );
    }
    let main = main.expect("PACKAGES is not empty");
    let world = resolve
        .select_world(&[main], Some(WORLD))
        .map_err(ComponentError::Wit)?;
    Ok((resolve, world))
}

/// Checks that `core` exports what a plugin's reactor module must.
fn check_exports(core: &[u8]) -> Result<(), ComponentError> {
    let mut exports = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(core) {
        match payload.map_err(|e| ComponentError::NotWasm(e.to_string()))? {
            wasmparser::Payload::ExportSection(section) => {
                for export in section {
                    let export = export.map_err(|e| ComponentError::NotWasm(e.to_string()))?;
                    exports.push(export.name.to_owned());
                }
            }
            wasmparser::Payload::Version {
                encoding: wasmparser::Encoding::Component,
                ..
            } => {
                return Err(ComponentError::NotWasm(
                    "it is already a component, not a core module".into(),
                ));
            }
            _ => {}
        }
    }
    for (export, advice) in REQUIRED_EXPORTS {
        if !exports.iter().any(|name| name == export) {
            return Err(ComponentError::MissingExport { export, advice });
        }
    }
    Ok(())
}

/// `core` (a WASI preview1 reactor module exporting the world's functions
/// under their canonical ABI names) as a component of [`WORLD`].
pub fn componentize(core: &[u8]) -> Result<Vec<u8>, ComponentError> {
    check_exports(core)?;
    let (resolve, world) = world()?;
    let mut module = core.to_vec();
    wit_component::embed_component_metadata(&mut module, &resolve, world, StringEncoding::UTF8)
        .map_err(ComponentError::Encode)?;
    ComponentEncoder::default()
        .validate(true)
        .module(&module)
        .and_then(|encoder| {
            encoder.adapter(
                WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME,
                WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
            )
        })
        .and_then(|mut encoder| encoder.encode())
        .map_err(ComponentError::Encode)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A core module from WAT text.
    fn module(text: &str) -> Vec<u8> {
        wat::parse_str(text).expect("valid WAT")
    }

    #[test]
    fn the_embedded_wit_resolves_to_the_world_with_delivery_and_admission() {
        let (resolve, world) = world().unwrap();
        let world = &resolve.worlds[world];
        let imports: Vec<String> = world
            .imports
            .keys()
            .map(|key| resolve.name_world_key(key))
            .collect();
        for interface in [
            "herald:plugin/log@0.2.0",
            "herald:plugin/index@0.3.0",
            "herald:plugin/deadline@0.4.0",
            "herald:plugin/cluster@0.6.0",
            "wasi:http/outgoing-handler@0.2.12",
        ] {
            assert!(
                imports.iter().any(|name| name == interface),
                "{interface} in {imports:?}"
            );
        }
        let mut exports: Vec<String> = world
            .exports
            .keys()
            .map(|key| resolve.name_world_key(key))
            .collect();
        exports.sort();
        assert_eq!(
            exports,
            [
                "herald:plugin/admission@0.5.0",
                "herald:plugin/delivery@0.7.0",
                "manifest"
            ]
        );
        assert!(
            !imports
                .iter()
                .any(|name| name.starts_with("herald:plugin/handler")),
            "0.7.0 replaces the handler export and imports none: {imports:?}"
        );
    }

    #[test]
    fn a_module_without_the_plugin_exports_is_refused_naming_what_is_missing() {
        let command = module(r#"(module (memory (export "memory") 1) (func (export "_start")))"#);
        let err = componentize(&command).unwrap_err().to_string();
        assert!(err.contains("exports no `_initialize`"), "{err}");
        assert!(err.contains("-buildmode=c-shared"), "{err}");

        let no_manifest =
            module(r#"(module (memory (export "memory") 1) (func (export "_initialize")))"#);
        let err = componentize(&no_manifest).unwrap_err().to_string();
        assert!(err.contains("exports no `manifest`"), "{err}");
        assert!(err.contains("herald.Register"), "{err}");

        let before_admission = module(
            r#"(module (memory (export "memory") 1) (func (export "_initialize"))
                (func (export "manifest") (result i32) i32.const 0))"#,
        );
        let err = componentize(&before_admission).unwrap_err().to_string();
        assert!(
            err.contains("exports no `herald:plugin/admission@0.5.0#declare`"),
            "{err}"
        );
        assert!(err.contains("predates world 0.5.0"), "{err}");

        // Built with the SDK of world 0.6.0: admission, and 0.2.0's handler
        // in place of delivery.
        let before_delivery = module(
            r#"(module (memory (export "memory") 1) (func (export "_initialize"))
                (func (export "manifest") (result i32) i32.const 0)
                (func (export "herald:plugin/admission@0.5.0#declare") (result i32) i32.const 0)
                (func (export "herald:plugin/handler@0.2.0#on-add") (param i32) (result i32) i32.const 0))"#,
        );
        let err = componentize(&before_delivery).unwrap_err().to_string();
        assert!(
            err.contains("exports no `herald:plugin/delivery@0.7.0#deliver`"),
            "{err}"
        );
        assert!(err.contains("predates world 0.7.0"), "{err}");
    }

    #[test]
    fn a_module_missing_a_delivery_function_is_refused_by_the_encoder() {
        // Exports the manifest, admission and `deliver`, but not
        // `options`.
        let partial = module(
            r#"(module
                (memory (export "memory") 1)
                (func (export "_initialize"))
                (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32) i32.const 0)
                (func (export "manifest") (result i32) i32.const 0)
                (func (export "herald:plugin/admission@0.5.0#declare") (result i32) i32.const 0)
                (func (export "herald:plugin/admission@0.5.0#validate") (param i32) (result i32) i32.const 0)
                (func (export "herald:plugin/admission@0.5.0#mutate") (param i32) (result i32) i32.const 0)
                (func (export "herald:plugin/delivery@0.7.0#deliver") (param i32 i32) (result i32) i32.const 0))"#,
        );
        let err = componentize(&partial).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("componentizing against {WORLD}")),
            "{err}"
        );
        assert!(err.contains("options"), "{err}");
    }

    #[test]
    fn garbage_and_components_are_not_core_modules() {
        let err = componentize(b"not wasm").unwrap_err().to_string();
        assert!(err.contains("not valid WebAssembly"), "{err}");
        let component = wat::parse_str("(component)").unwrap();
        let err = componentize(&component).unwrap_err().to_string();
        assert!(err.contains("already a component"), "{err}");
    }
}
