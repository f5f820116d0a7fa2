//! The JavaScript project: an ES module using `@herald/sdk`, built with
//! componentize-js.

use super::Template;
use super::template::{EVENTS, Project};

/// The JavaScript project of `template`.
pub(super) fn project(template: Template) -> Option<Project> {
    match template {
        Template::Handler => Some(Project {
            files: &[
                ("package.json", include_str!("templates/js/package.json")),
                // `install-links`: npm copies the SDK into the project (and
                // installs its toolchain there) instead of linking the checkout.
                (".npmrc", include_str!("templates/js/npmrc")),
                ("src/plugin.js", include_str!("templates/js/plugin.js")),
                (
                    "test/plugin.test.js",
                    include_str!("templates/js/plugin.test.js"),
                ),
                ("README.md", include_str!("templates/js/README.md")),
                ("events.jsonl", EVENTS),
            ],
            next_steps: "    npm install      # a copy of the SDK and its build toolchain (see README.md)\n    \
                 npm test         # unit tests\n    \
                 npm run build    # build\n    \
                 herald plugin check {{name}}.wasm\n    \
                 herald plugin replay {{name}}.wasm --events events.jsonl",
        }),
        Template::Admission => None,
    }
}
