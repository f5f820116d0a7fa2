//! Kubernetes REST paths and queries, built from typed segments.
//!
//! Every segment of a path (group, version, namespace, resource, name,
//! subresource) is percent-encoded on its own as it is appended, and a
//! query is built pair by pair by a URL-encoding serializer: nothing a
//! plugin supplies is ever formatted into a URL, so a name holding `/`, `?`,
//! `#` or `%` stays one segment of the path it was meant for, and cannot cut
//! off or add a query parameter. Identifiers are also checked against the
//! rules of their fields before they get here (`herald_grammar::name`):
//! encoding is the second line of defence, not the only one.
//!
//! ```
//! use herald::api_path::{ApiPath, Query};
//!
//! let path = ApiPath::collection("", "v1", Some("team-a"), "configmaps")
//!     .object("web?dryRun=None#")
//!     .subresource("status");
//! assert_eq!(
//!     path.as_str(),
//!     "/api/v1/namespaces/team-a/configmaps/web%3FdryRun%3DNone%23/status"
//! );
//! let query = Query::new().pair("dryRun", "All").pair("fieldManager", "herald.a&b");
//! assert_eq!(query.as_str(), "dryRun=All&fieldManager=herald.a%26b");
//! ```

use std::fmt::Write as _;

/// A path on the API server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiPath(String);

impl ApiPath {
    /// The collection of `plural` in `group`/`version` (`""` for the core
    /// group), in `namespace` or across all namespaces (or cluster-scoped).
    pub fn collection(group: &str, version: &str, namespace: Option<&str>, plural: &str) -> Self {
        let mut path = ApiPath(String::new());
        if group.is_empty() {
            path.push("api");
        } else {
            path.push("apis");
            path.push(group);
        }
        path.push(version);
        if let Some(namespace) = namespace {
            path.push("namespaces");
            path.push(namespace);
        }
        path.push(plural);
        path
    }

    /// The object `name` of this collection.
    pub fn object(mut self, name: &str) -> Self {
        self.push(name);
        self
    }

    /// The `subresource` of this object.
    pub fn subresource(mut self, subresource: &str) -> Self {
        self.push(subresource);
        self
    }

    /// The path, as sent.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Appends `/` and `segment`, percent-encoded.
    fn push(&mut self, segment: &str) {
        self.0.push('/');
        encode_segment(&mut self.0, segment);
    }
}

impl std::fmt::Display for ApiPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A query string, built pair by pair, each key and value URL-encoded.
#[derive(Debug, Clone, Default)]
pub struct Query(Vec<(String, String)>);

impl Query {
    /// An empty query.
    pub fn new() -> Self {
        Query::default()
    }

    /// Adds `key=value`.
    pub fn pair(mut self, key: &str, value: &str) -> Self {
        self.0.push((key.to_owned(), value.to_owned()));
        self
    }

    /// The query, without its `?`.
    pub fn as_str(&self) -> String {
        form_urlencoded::Serializer::new(String::new())
            .extend_pairs(&self.0)
            .finish()
    }

    /// `path` with this query, if it has any pair.
    pub fn with_path(&self, path: &ApiPath) -> String {
        let query = self.as_str();
        if query.is_empty() {
            path.as_str().to_owned()
        } else {
            format!("{path}?{query}")
        }
    }
}

/// Percent-encodes `segment` into `out`: RFC 3986's unreserved characters
/// (letters, digits, `-`, `.`, `_`, `~`) as they are, every other byte as
/// `%XX`; a segment of dots only (`.`, `..`), which a path normaliser would
/// fold, has its dots encoded too.
fn encode_segment(out: &mut String, segment: &str) {
    let only_dots = !segment.is_empty() && segment.bytes().all(|b| b == b'.');
    for byte in segment.bytes() {
        let unreserved = byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'~');
        if unreserved || (byte == b'.' && !only_dots) {
            out.push(byte as char);
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_follow_the_api_layout() {
        assert_eq!(
            ApiPath::collection("", "v1", None, "pods").as_str(),
            "/api/v1/pods"
        );
        assert_eq!(
            ApiPath::collection("apps", "v1", Some("a"), "deployments").as_str(),
            "/apis/apps/v1/namespaces/a/deployments"
        );
        assert_eq!(
            ApiPath::collection("", "v1", Some("shop"), "pods")
                .object("web-1")
                .subresource("status")
                .as_str(),
            "/api/v1/namespaces/shop/pods/web-1/status"
        );
    }

    #[test]
    fn a_hostile_segment_stays_one_segment() {
        let path = |name: &str| {
            ApiPath::collection("", "v1", Some("n"), "pods")
                .object(name)
                .as_str()
                .to_owned()
        };
        assert_eq!(path("web/status"), "/api/v1/namespaces/n/pods/web%2Fstatus");
        assert_eq!(
            path("web?fieldManager=kubectl"),
            "/api/v1/namespaces/n/pods/web%3FfieldManager%3Dkubectl"
        );
        assert_eq!(path("web#"), "/api/v1/namespaces/n/pods/web%23");
        assert_eq!(path("web%2F"), "/api/v1/namespaces/n/pods/web%252F");
        assert_eq!(path(".."), "/api/v1/namespaces/n/pods/%2E%2E");
        assert_eq!(path("a.b"), "/api/v1/namespaces/n/pods/a.b");
        assert_eq!(path("é\n"), "/api/v1/namespaces/n/pods/%C3%A9%0A");
    }

    #[test]
    fn a_query_is_the_hosts_pairs_each_encoded() {
        let query = Query::new()
            .pair("dryRun", "All")
            .pair("fieldManager", "herald.x&force=true");
        assert_eq!(
            query.as_str(),
            "dryRun=All&fieldManager=herald.x%26force%3Dtrue"
        );
        let path = ApiPath::collection("", "v1", None, "nodes");
        assert_eq!(Query::new().with_path(&path), "/api/v1/nodes");
        assert_eq!(
            query.with_path(&path),
            "/api/v1/nodes?dryRun=All&fieldManager=herald.x%26force%3Dtrue"
        );
    }
}
