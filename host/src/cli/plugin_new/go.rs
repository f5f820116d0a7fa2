//! The Go project: a main package using `herald.dev/sdk/go`, built with
//! the standard Go toolchain and `herald plugin build`.

use super::Template;
use super::template::{DEPLOYMENTS, EVENTS, Project, REVIEWS};

/// The `go.mod` of every template: the SDK through a `replace` directive.
const GO_MOD: &str = include_str!("templates/go/go.mod");

/// The steps every Go project takes before its replay: requirements, unit
/// tests, build, check (a macro, so that `concat!` can join it).
macro_rules! build_and_check {
    () => {
        "    go mod tidy                            # the SDK's requirements (k8s.io/api) into go.mod, go.sum\n    \
         go test ./...                          # unit tests\n    \
         herald plugin build -o {{name}}.wasm   # build: go build, then Herald componentizes\n    \
         herald plugin check {{name}}.wasm\n    "
    };
}

/// The Go project of `template`.
pub(super) fn project(template: Template) -> Option<Project> {
    Some(match template {
        Template::Handler => Project {
            files: &[
                ("go.mod", GO_MOD),
                ("main.go", include_str!("templates/go/main.go")),
                ("main_test.go", include_str!("templates/go/main_test.go")),
                ("README.md", include_str!("templates/go/README.md")),
                ("events.jsonl", EVENTS),
            ],
            next_steps: concat!(
                build_and_check!(),
                "herald plugin replay {{name}}.wasm --events events.jsonl"
            ),
        },
        Template::Admission => Project {
            files: &[
                ("go.mod", GO_MOD),
                ("main.go", include_str!("templates/go/admission/main.go")),
                (
                    "main_test.go",
                    include_str!("templates/go/admission/main_test.go"),
                ),
                (
                    "README.md",
                    include_str!("templates/go/admission/README.md"),
                ),
                ("reviews.jsonl", REVIEWS),
            ],
            next_steps: concat!(
                build_and_check!(),
                "herald plugin replay {{name}}.wasm --reviews reviews.jsonl"
            ),
        },
        Template::Reconcile => Project {
            files: &[
                ("go.mod", GO_MOD),
                ("main.go", include_str!("templates/go/reconcile/main.go")),
                (
                    "main_test.go",
                    include_str!("templates/go/reconcile/main_test.go"),
                ),
                (
                    "README.md",
                    include_str!("templates/go/reconcile/README.md"),
                ),
                ("deployments.jsonl", DEPLOYMENTS),
            ],
            next_steps: concat!(
                build_and_check!(),
                "herald plugin replay {{name}}.wasm --events deployments.jsonl"
            ),
        },
    })
}
