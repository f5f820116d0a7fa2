//! The Go project: a main package using `herald.dev/sdk/go`, built with
//! the standard Go toolchain and `herald plugin build`.

use super::Template;
use super::template::{EVENTS, Project};

/// The Go project of `template`.
pub(super) fn project(template: Template) -> Option<Project> {
    match template {
        Template::Handler => Some(Project {
            files: &[
                ("go.mod", include_str!("templates/go/go.mod")),
                ("main.go", include_str!("templates/go/main.go")),
                ("main_test.go", include_str!("templates/go/main_test.go")),
                ("README.md", include_str!("templates/go/README.md")),
                ("events.jsonl", EVENTS),
            ],
            next_steps: "    go mod tidy                            # the SDK's requirements (k8s.io/api) into go.mod, go.sum\n    \
                 go test ./...                          # unit tests\n    \
                 herald plugin build -o {{name}}.wasm   # build: go build, then Herald componentizes\n    \
                 herald plugin check {{name}}.wasm\n    \
                 herald plugin replay {{name}}.wasm --events events.jsonl",
        }),
        Template::Admission => None,
    }
}
