//! The Rust project: a `cdylib` crate using `herald-sdk`.

use super::Template;
use super::template::{DEPLOYMENTS, EVENTS, Project, REVIEWS};

/// The Rust project of `template`.
pub(super) fn project(template: Template) -> Option<Project> {
    Some(match template {
        Template::Handler => Project {
            files: &[
                ("Cargo.toml", include_str!("templates/rust/Cargo.toml")),
                ("src/lib.rs", include_str!("templates/rust/lib.rs")),
                ("README.md", include_str!("templates/rust/README.md")),
                ("events.jsonl", EVENTS),
            ],
            next_steps: "    cargo test                                      # unit tests\n    \
                 cargo build --release --target wasm32-wasip2    # build\n    \
                 herald plugin check target/wasm32-wasip2/release/{{crate}}.wasm\n    \
                 herald plugin replay target/wasm32-wasip2/release/{{crate}}.wasm --events events.jsonl",
        },
        Template::Admission => Project {
            files: &[
                (
                    "Cargo.toml",
                    include_str!("templates/rust/admission/Cargo.toml"),
                ),
                (
                    "src/lib.rs",
                    include_str!("templates/rust/admission/lib.rs"),
                ),
                (
                    "README.md",
                    include_str!("templates/rust/admission/README.md"),
                ),
                ("reviews.jsonl", REVIEWS),
            ],
            next_steps: "    cargo test                                      # unit tests\n    \
                 cargo build --release --target wasm32-wasip2    # build\n    \
                 herald plugin check target/wasm32-wasip2/release/{{crate}}.wasm\n    \
                 herald plugin replay target/wasm32-wasip2/release/{{crate}}.wasm --reviews reviews.jsonl",
        },
        Template::Reconcile => Project {
            files: &[
                (
                    "Cargo.toml",
                    include_str!("templates/rust/reconcile/Cargo.toml"),
                ),
                (
                    "src/lib.rs",
                    include_str!("templates/rust/reconcile/lib.rs"),
                ),
                (
                    "README.md",
                    include_str!("templates/rust/reconcile/README.md"),
                ),
                ("deployments.jsonl", DEPLOYMENTS),
            ],
            next_steps: "    cargo test                                      # unit tests\n    \
                 cargo build --release --target wasm32-wasip2    # build\n    \
                 herald plugin check target/wasm32-wasip2/release/{{crate}}.wasm\n    \
                 herald plugin replay target/wasm32-wasip2/release/{{crate}}.wasm --events deployments.jsonl",
        },
    })
}
