//! The Python project: a module using `herald_sdk`, built with
//! componentize-py.

use super::Template;
use super::template::{DEPLOYMENTS, EVENTS, Project, REVIEWS};

/// The commands to run in a Python project, ending with its replay
/// (`$replay`: the flag and the samples), as a template.
macro_rules! next_steps {
    ($replay:literal) => {
        concat!(
            "    python3 -m venv .venv                                          # the project's own environment\n",
            "    .venv/bin/python -m pip install '{{sdk}}[test]'                # the SDK, componentize-py, pytest\n",
            "    .venv/bin/python -m pytest                                     # unit tests\n",
            "    .venv/bin/python -m herald_sdk build app.py -o {{name}}.wasm   # build\n",
            "    herald plugin check {{name}}.wasm\n",
            "    herald plugin replay {{name}}.wasm ",
            $replay
        )
    };
}

/// The Python project of `template`.
pub(super) fn project(template: Template) -> Option<Project> {
    Some(match template {
        Template::Handler => Project {
            files: &[
                ("app.py", include_str!("templates/python/app.py")),
                ("test_app.py", include_str!("templates/python/test_app.py")),
                ("README.md", include_str!("templates/python/README.md")),
                ("events.jsonl", EVENTS),
            ],
            next_steps: next_steps!("--events events.jsonl"),
        },
        Template::Admission => Project {
            files: &[
                ("app.py", include_str!("templates/python/admission/app.py")),
                (
                    "test_app.py",
                    include_str!("templates/python/admission/test_app.py"),
                ),
                (
                    "README.md",
                    include_str!("templates/python/admission/README.md"),
                ),
                ("reviews.jsonl", REVIEWS),
            ],
            next_steps: next_steps!("--reviews reviews.jsonl"),
        },
        Template::Reconcile => Project {
            files: &[
                ("app.py", include_str!("templates/python/reconcile/app.py")),
                (
                    "test_app.py",
                    include_str!("templates/python/reconcile/test_app.py"),
                ),
                (
                    "README.md",
                    include_str!("templates/python/reconcile/README.md"),
                ),
                ("deployments.jsonl", DEPLOYMENTS),
            ],
            next_steps: next_steps!("--events deployments.jsonl"),
        },
    })
}
