//! URL routing: which discovery document or which resource, namespace, name and subresource
//! a request path addresses.

/// A request path for a resource or one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResourcePath {
    /// API group (`""` for core).
    pub group: String,
    /// Version.
    pub version: String,
    /// Namespace segment, if the path had one.
    pub namespace: Option<String>,
    /// Plural resource name.
    pub plural: String,
    /// Object name.
    pub name: Option<String>,
    /// Subresource (`status`).
    pub subresource: Option<String>,
    /// Whether the legacy `/watch/` prefix was used.
    pub watch_prefix: bool,
}

/// What a request path addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route {
    /// `/version`.
    Version,
    /// `/healthz`, `/livez`, `/readyz`.
    Health,
    /// `/api`.
    CoreVersions,
    /// `/apis`.
    Groups,
    /// `/apis/{group}`.
    Group(String),
    /// `/api/v1`, `/apis/{group}/{version}`.
    Resources {
        /// Group.
        group: String,
        /// Version.
        version: String,
    },
    /// `/openapi/v2`.
    OpenApiV2,
    /// `/openapi/v3`.
    OpenApiV3Root,
    /// `/openapi/v3/api/v1`, `/openapi/v3/apis/{group}/{version}`.
    OpenApiV3 {
        /// Group.
        group: String,
        /// Version.
        version: String,
    },
    /// A resource or object.
    Resource(ResourcePath),
    /// Nothing served.
    Unknown,
}

fn decode(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Some(b) = std::str::from_utf8(&bytes[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Route a request path.
pub(crate) fn route(path: &str) -> Route {
    let segs: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(decode)
        .collect();
    let s: Vec<&str> = segs.iter().map(String::as_str).collect();
    match s.as_slice() {
        ["version"] => Route::Version,
        ["healthz"] | ["livez"] | ["readyz"] => Route::Health,
        ["api"] => Route::CoreVersions,
        ["apis"] => Route::Groups,
        ["apis", group] => Route::Group(group.to_string()),
        ["api", version] => Route::Resources {
            group: String::new(),
            version: version.to_string(),
        },
        ["apis", group, version] => Route::Resources {
            group: group.to_string(),
            version: version.to_string(),
        },
        ["openapi", "v2"] => Route::OpenApiV2,
        ["openapi", "v3"] => Route::OpenApiV3Root,
        ["openapi", "v3", "api", version] => Route::OpenApiV3 {
            group: String::new(),
            version: version.to_string(),
        },
        ["openapi", "v3", "apis", group, version] => Route::OpenApiV3 {
            group: group.to_string(),
            version: version.to_string(),
        },
        ["api", version, rest @ ..] => resource("", version, rest),
        ["apis", group, version, rest @ ..] => resource(group, version, rest),
        _ => Route::Unknown,
    }
}

fn resource(group: &str, version: &str, rest: &[&str]) -> Route {
    let (watch_prefix, rest) = match rest {
        ["watch", tail @ ..] => (true, tail),
        _ => (false, rest),
    };
    // `/namespaces/{ns}/{resource}…` unless it is a namespace's own subresource.
    let namespaced = rest.len() >= 3
        && rest[0] == "namespaces"
        && !(group.is_empty() && rest.len() == 3 && matches!(rest[2], "status" | "finalize"));
    let (namespace, rest) = if namespaced {
        (Some(rest[1].to_string()), &rest[2..])
    } else {
        (None, rest)
    };
    if rest.is_empty() || rest.len() > 3 {
        return Route::Unknown;
    }
    Route::Resource(ResourcePath {
        group: group.to_string(),
        version: version.to_string(),
        namespace,
        plural: rest[0].to_string(),
        name: rest.get(1).map(|s| s.to_string()),
        subresource: rest.get(2).map(|s| s.to_string()),
        watch_prefix,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(route: Route) -> ResourcePath {
        match route {
            Route::Resource(r) => r,
            other => panic!("not a resource route: {other:?}"),
        }
    }

    #[test]
    fn discovery_paths_route_to_documents() {
        assert_eq!(route("/api"), Route::CoreVersions);
        assert_eq!(route("/apis/"), Route::Groups);
        assert_eq!(route("/apis/apps"), Route::Group("apps".into()));
        assert_eq!(
            route("/apis/apps/v1"),
            Route::Resources {
                group: "apps".into(),
                version: "v1".into()
            }
        );
        assert_eq!(route("/nope"), Route::Unknown);
    }

    #[test]
    fn namespaced_object_paths_split_into_parts() {
        let r = res(route("/api/v1/namespaces/shop/pods/web-1/status"));
        assert_eq!(r.namespace.as_deref(), Some("shop"));
        assert_eq!(r.plural, "pods");
        assert_eq!(r.name.as_deref(), Some("web-1"));
        assert_eq!(r.subresource.as_deref(), Some("status"));
    }

    #[test]
    fn a_namespaces_own_paths_are_cluster_scoped() {
        let r = res(route("/api/v1/namespaces/shop"));
        assert_eq!(
            (r.namespace, r.plural.as_str(), r.name.as_deref()),
            (None, "namespaces", Some("shop"))
        );
        let r = res(route("/api/v1/namespaces/shop/status"));
        assert_eq!(r.subresource.as_deref(), Some("status"));
        assert_eq!(r.namespace, None);
    }

    #[test]
    fn legacy_watch_prefix_and_escapes_are_understood() {
        let r = res(route("/apis/apps/v1/watch/namespaces/a%2Db/deployments"));
        assert!(r.watch_prefix);
        assert_eq!(r.namespace.as_deref(), Some("a-b"));
        assert_eq!(r.plural, "deployments");
    }
}
