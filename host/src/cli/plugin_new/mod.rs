//! `herald plugin new`: a plugin project that builds, tests and replays out
//! of the box, in Rust, Python, JavaScript or Go, from one of two
//! templates: a handler of Pod notifications, or an admission policy.

mod go;
mod js;
mod python;
mod rust;
mod template;

use super::fail;
use crate::plugin::is_plugin_name;
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use template::{Project, Substitutions};

/// Arguments of `plugin new`.
#[derive(Debug, Args)]
pub struct NewArgs {
    /// The plugin's name: lowercase letters, digits and '-' (at most 63,
    /// starting and ending with a letter or digit). Also the directory made.
    pub name: String,
    /// The language of the plugin.
    #[arg(long, value_enum)]
    pub lang: Language,
    /// What the plugin does.
    #[arg(long, value_enum, default_value_t = Template::Handler)]
    pub template: Template,
    /// The directory to create the project in.
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// The SDK the project depends on: `plugin-sdk`, `sdk/python`, `sdk/js`
    /// or `sdk/go` of a Herald checkout. By default, the one of the checkout this binary
    /// was built from, if it is still there.
    #[arg(long)]
    pub sdk: Option<PathBuf>,
}

/// The languages a plugin can be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Language {
    /// A `cdylib` crate using `herald-sdk`.
    Rust,
    /// A module using `herald_sdk`, built with componentize-py.
    Python,
    /// An ES module using `@herald/sdk`, built with componentize-js.
    Js,
    /// A main package using `herald.dev/sdk/go`, built with the standard Go
    /// toolchain and `herald plugin build`.
    Go,
}

/// What a new plugin does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Template {
    /// Handles Pod notifications: logs Pods added, changing phase and
    /// deleted; replays `events.jsonl`.
    Handler,
    /// Decides at admission: refuses Pods whose images are not pinned (no
    /// tag or `:latest`); replays `reviews.jsonl`.
    Admission,
    /// A controller written with the reconcile API: keeps a summary
    /// ConfigMap, owned by it, for every Deployment; replays
    /// `deployments.jsonl`.
    Reconcile,
}

impl Template {
    /// As `--template` spells it.
    fn name(self) -> &'static str {
        match self {
            Template::Handler => "handler",
            Template::Admission => "admission",
            Template::Reconcile => "reconcile",
        }
    }
}

impl Language {
    /// Where this language's SDK lives in a Herald checkout.
    fn sdk_in_checkout(self) -> &'static str {
        match self {
            Language::Rust => "plugin-sdk",
            Language::Python => "sdk/python",
            Language::Js => "sdk/js",
            Language::Go => "sdk/go",
        }
    }
}

/// Why `plugin new` made no project; each variant names the value or path
/// at fault.
#[derive(Debug, thiserror::Error)]
enum NewError {
    /// The name (held here) is not a plugin name.
    #[error(
        "{0:?} is not a valid plugin name: use lowercase letters, digits and '-' (at most 63, \
         starting and ending with a letter or digit), e.g. pod-watch"
    )]
    Name(String),
    /// No template of that kind for that language.
    #[error("there is no {template} template for {language:?} yet")]
    NoTemplate {
        /// The template's name.
        template: &'static str,
        /// The language.
        language: Language,
    },
    /// The project's directory (held here) exists and holds files.
    #[error("{} already exists and is not empty: refusing to overwrite it", .0.display())]
    NotEmpty(PathBuf),
    /// `--sdk` (held here) is not a directory.
    #[error("--sdk {}: no such directory", .0.display())]
    NoSdkDir(PathBuf),
    /// No `--sdk`, and the checkout this binary was built from is gone.
    #[error(
        "cannot find the SDK (this binary was built from a checkout that is gone): pass --sdk \
         with the path of `{0}` in a Herald checkout"
    )]
    NoSdk(&'static str),
    /// A directory (held here) could not be made.
    #[error("{}: cannot create: {reason}", path.display())]
    Create {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        reason: std::io::Error,
    },
    /// A file (held here) could not be written.
    #[error("{}: cannot write: {reason}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        reason: std::io::Error,
    },
}

/// The project for `language` and `template`, or why there is none.
fn project(language: Language, template: Template) -> Result<Project, NewError> {
    let project = match language {
        Language::Rust => rust::project(template),
        Language::Python => python::project(template),
        Language::Js => js::project(template),
        Language::Go => go::project(template),
    };
    project.ok_or(NewError::NoTemplate {
        template: template.name(),
        language,
    })
}

/// Creates the project; prints what to run next.
pub fn run(args: NewArgs) -> ExitCode {
    match create(&args) {
        Ok(next) => {
            println!("{next}");
            ExitCode::SUCCESS
        }
        Err(message) => fail(message),
    }
}

/// The SDK directory: `--sdk`, else this checkout's, made absolute.
fn sdk(args: &NewArgs) -> Result<PathBuf, NewError> {
    let (path, given) = match &args.sdk {
        Some(path) => (path.clone(), true),
        None => (
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("..")
                .join(args.lang.sdk_in_checkout()),
            false,
        ),
    };
    match std::fs::canonicalize(&path) {
        Ok(path) if path.is_dir() => Ok(path),
        _ if given => Err(NewError::NoSdkDir(path)),
        _ => Err(NewError::NoSdk(args.lang.sdk_in_checkout())),
    }
}

/// Writes the project; returns the message naming it and the next commands.
fn create(args: &NewArgs) -> Result<String, NewError> {
    if !is_plugin_name(&args.name) {
        return Err(NewError::Name(args.name.clone()));
    }
    let template = project(args.lang, args.template)?;
    let directory = args.dir.join(&args.name);
    if let Ok(mut entries) = std::fs::read_dir(&directory)
        && entries.next().is_some()
    {
        return Err(NewError::NotEmpty(directory));
    }
    let sdk = sdk(args)?;
    let values = Substitutions {
        name: &args.name,
        sdk: &sdk.to_string_lossy(),
    };
    for (path, text) in template.files {
        let target = directory.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|reason| NewError::Create {
                path: parent.to_owned(),
                reason,
            })?;
        }
        std::fs::write(&target, values.apply(text)).map_err(|reason| NewError::Write {
            path: target.clone(),
            reason,
        })?;
    }
    Ok(values.apply(&format!(
        "created {} ({:?} {} plugin {{{{name}}}})\n\nnext:\n    cd {}\n{}",
        directory.display(),
        args.lang,
        args.template.name(),
        directory.display(),
        template.next_steps
    )))
}
