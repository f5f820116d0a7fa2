//! The JavaScript project: an ES module using `@herald/sdk`, built with
//! componentize-js.

use super::Template;
use super::template::{DEPLOYMENTS, EVENTS, Project, REVIEWS};

/// `install-links`: npm copies the SDK into the project (and installs its
/// toolchain there) instead of linking the checkout.
const NPMRC: &str = include_str!("templates/js/npmrc");

/// The commands to run in a JavaScript project, ending with its replay
/// (`$replay`: the flag and the samples), as a template.
macro_rules! next_steps {
    ($replay:literal) => {
        concat!(
            "    npm install      # a copy of the SDK and its build toolchain (see README.md)\n",
            "    npm test         # unit tests\n",
            "    npm run build    # build\n",
            "    herald plugin check {{name}}.wasm\n",
            "    herald plugin replay {{name}}.wasm ",
            $replay
        )
    };
}

/// The JavaScript project of `template`.
pub(super) fn project(template: Template) -> Option<Project> {
    Some(match template {
        Template::Handler => Project {
            files: &[
                ("package.json", include_str!("templates/js/package.json")),
                (".npmrc", NPMRC),
                ("src/plugin.js", include_str!("templates/js/plugin.js")),
                (
                    "test/plugin.test.js",
                    include_str!("templates/js/plugin.test.js"),
                ),
                ("README.md", include_str!("templates/js/README.md")),
                ("events.jsonl", EVENTS),
            ],
            next_steps: next_steps!("--events events.jsonl"),
        },
        Template::Admission => Project {
            files: &[
                (
                    "package.json",
                    include_str!("templates/js/admission/package.json"),
                ),
                (".npmrc", NPMRC),
                (
                    "src/plugin.js",
                    include_str!("templates/js/admission/plugin.js"),
                ),
                (
                    "test/plugin.test.js",
                    include_str!("templates/js/admission/plugin.test.js"),
                ),
                (
                    "README.md",
                    include_str!("templates/js/admission/README.md"),
                ),
                ("reviews.jsonl", REVIEWS),
            ],
            next_steps: next_steps!("--reviews reviews.jsonl"),
        },
        Template::Reconcile => Project {
            files: &[
                (
                    "package.json",
                    include_str!("templates/js/reconcile/package.json"),
                ),
                (".npmrc", NPMRC),
                (
                    "src/plugin.js",
                    include_str!("templates/js/reconcile/plugin.js"),
                ),
                (
                    "test/plugin.test.js",
                    include_str!("templates/js/reconcile/plugin.test.js"),
                ),
                (
                    "README.md",
                    include_str!("templates/js/reconcile/README.md"),
                ),
                ("deployments.jsonl", DEPLOYMENTS),
            ],
            next_steps: next_steps!("--events deployments.jsonl"),
        },
    })
}
