//! The project templates, one set of files per language, and the values
//! substituted into them.

use super::Language;

/// The sample events every project replays: Pods listed, added, changing
/// phase and deleted.
const EVENTS: &str = include_str!("templates/events.jsonl");

/// The files of a `language` project: path in the project, template text.
pub(super) fn files(language: Language) -> &'static [(&'static str, &'static str)] {
    match language {
        Language::Rust => &[
            ("Cargo.toml", include_str!("templates/rust/Cargo.toml")),
            ("src/lib.rs", include_str!("templates/rust/lib.rs")),
            ("README.md", include_str!("templates/rust/README.md")),
            ("events.jsonl", EVENTS),
        ],
        Language::Python => &[
            ("app.py", include_str!("templates/python/app.py")),
            ("test_app.py", include_str!("templates/python/test_app.py")),
            ("README.md", include_str!("templates/python/README.md")),
            ("events.jsonl", EVENTS),
        ],
        Language::Js => &[
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
        Language::Go => &[
            ("go.mod", include_str!("templates/go/go.mod")),
            ("main.go", include_str!("templates/go/main.go")),
            ("main_test.go", include_str!("templates/go/main_test.go")),
            ("README.md", include_str!("templates/go/README.md")),
            ("events.jsonl", EVENTS),
        ],
    }
}

/// The commands to run in a new `language` project, indented, as a template.
pub(super) fn next_steps(language: Language) -> &'static str {
    match language {
        Language::Rust => {
            "    cargo test                                      # unit tests\n    \
             cargo build --release --target wasm32-wasip2    # build\n    \
             herald plugin check target/wasm32-wasip2/release/{{crate}}.wasm\n    \
             herald plugin replay target/wasm32-wasip2/release/{{crate}}.wasm --events events.jsonl"
        }
        Language::Python => {
            "    python3 -m venv .venv                                          # the project's own environment\n    \
             .venv/bin/python -m pip install '{{sdk}}[test]'                # the SDK, componentize-py, pytest\n    \
             .venv/bin/python -m pytest                                     # unit tests\n    \
             .venv/bin/python -m herald_sdk build app.py -o {{name}}.wasm   # build\n    \
             herald plugin check {{name}}.wasm\n    \
             herald plugin replay {{name}}.wasm --events events.jsonl"
        }
        Language::Js => {
            "    npm install      # a copy of the SDK and its build toolchain (see README.md)\n    \
             npm test         # unit tests\n    \
             npm run build    # build\n    \
             herald plugin check {{name}}.wasm\n    \
             herald plugin replay {{name}}.wasm --events events.jsonl"
        }
        Language::Go => {
            "    go mod tidy                            # the SDK's requirements (k8s.io/api) into go.mod, go.sum\n    \
             go test ./...                          # unit tests\n    \
             herald plugin build -o {{name}}.wasm   # build: go build, then Herald componentizes\n    \
             herald plugin check {{name}}.wasm\n    \
             herald plugin replay {{name}}.wasm --events events.jsonl"
        }
    }
}

/// What the `{{…}}` placeholders stand for.
pub(super) struct Substitutions<'a> {
    /// `{{name}}`: the plugin's name.
    pub name: &'a str,
    /// `{{sdk}}`: the SDK's directory.
    pub sdk: &'a str,
}

impl Substitutions<'_> {
    /// `text` with every placeholder replaced; `{{crate}}` is the name as
    /// Cargo names the built library (`-` becomes `_`).
    pub fn apply(&self, text: &str) -> String {
        text.replace("{{name}}", self.name)
            .replace("{{crate}}", &self.name.replace('-', "_"))
            .replace("{{sdk}}", self.sdk)
    }
}
