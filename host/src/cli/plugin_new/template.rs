//! What a project template is ([`Project`]; each language's are in its
//! own module), the samples every project replays, and the values
//! substituted into them.

/// The sample events every handler project replays: Pods listed, added,
/// changing phase and deleted.
pub(super) const EVENTS: &str = include_str!("templates/events.jsonl");

/// The sample AdmissionReviews every admission project replays: a Pod
/// created with a pinned image, one with `:latest`, one updated to an
/// image with no tag, and one deleted.
pub(super) const REVIEWS: &str = include_str!("templates/reviews.jsonl");

/// The sample events every reconcile project replays: a Deployment listed,
/// its summary ConfigMap added (which reconciles its owner), the Deployment
/// changed, then deleted.
pub(super) const DEPLOYMENTS: &str = include_str!("templates/deployments.jsonl");

/// One language's project of one template.
pub(super) struct Project {
    /// Path in the project, template text.
    pub files: &'static [(&'static str, &'static str)],
    /// The commands to run in the new project, indented, as a template.
    pub next_steps: &'static str,
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
