//! Discovery documents (`/version`, `/api`, `/apis`, resource lists) and the minimal OpenAPI v3
//! documents kubectl consults to decide it may use server-side field validation.

use serde_json::{Value, json};

use crate::registry::{Registry, ResourceType, VERBS};

/// The Kubernetes version the server claims to be.
pub(crate) const GIT_VERSION: &str = "v1.32.0+herald";

/// `/version`.
pub(crate) fn version() -> Value {
    json!({
        "major": "1",
        "minor": "32",
        "gitVersion": GIT_VERSION,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-01-01T00:00:00Z",
        "goVersion": "go1.23.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

/// `/api`.
pub(crate) fn core_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn group_json(name: &str, versions: &[String]) -> Value {
    let gv = |v: &String| json!({"groupVersion": format!("{name}/{v}"), "version": v});
    json!({
        "name": name,
        "versions": versions.iter().map(gv).collect::<Vec<_>>(),
        "preferredVersion": versions.first().map(gv).unwrap_or(Value::Null),
    })
}

/// `/apis`.
pub(crate) fn groups(registry: &Registry) -> Value {
    let groups: Vec<Value> = registry
        .groups()
        .iter()
        .map(|g| group_json(&g.name, &g.versions))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/{group}`.
pub(crate) fn group(registry: &Registry, name: &str) -> Option<Value> {
    let g = registry.groups().into_iter().find(|g| g.name == name)?;
    let mut doc = group_json(&g.name, &g.versions);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Some(doc)
}

fn resource_entries(rt: &ResourceType) -> Vec<Value> {
    let mut main = json!({
        "name": rt.id.plural,
        "singularName": rt.singular,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": VERBS,
    });
    if !rt.short_names.is_empty() {
        main["shortNames"] = json!(rt.short_names);
    }
    if !rt.categories.is_empty() {
        main["categories"] = json!(rt.categories);
    }
    let mut entries = vec![main];
    if rt.has_status {
        entries.push(json!({
            "name": format!("{}/status", rt.id.plural),
            "singularName": "",
            "namespaced": rt.namespaced,
            "kind": rt.kind,
            "verbs": ["get", "patch", "update"],
        }));
    }
    entries
}

/// `/api/v1`, `/apis/{group}/{version}`.
pub(crate) fn resources(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let types = registry.in_group_version(group, version);
    if types.is_empty() {
        return None;
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    let resources: Vec<Value> = types.iter().flat_map(|rt| resource_entries(rt)).collect();
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }))
}

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// Media type of the protobuf OpenAPI v2 document.
pub(crate) const OPENAPI_V2_PROTOBUF: &str =
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// `/openapi/v2` as JSON: a valid but empty Swagger document (no definitions, so kubectl
/// skips client-side schema validation).
pub(crate) fn openapi_v2_json() -> Value {
    json!({"swagger": "2.0", "info": {"title": "Kubernetes", "version": GIT_VERSION}, "paths": {}, "definitions": {}})
}

/// `/openapi/v2` as protobuf (`openapi_v2.Document` with only `swagger` and `info` set), the
/// form kubectl asks for.
pub(crate) fn openapi_v2_protobuf() -> Vec<u8> {
    fn field(out: &mut Vec<u8>, number: u8, bytes: &[u8]) {
        out.push((number << 3) | 2);
        out.push(u8::try_from(bytes.len()).expect("short fields"));
        out.extend_from_slice(bytes);
    }
    let mut info = Vec::new();
    field(&mut info, 1, b"Kubernetes");
    field(&mut info, 2, GIT_VERSION.as_bytes());
    let mut doc = Vec::new();
    field(&mut doc, 1, b"2.0");
    field(&mut doc, 2, &info);
    doc
}

/// Changes whenever the OpenAPI v3 documents change, so that kubectl's cache refetches them.
const OPENAPI_HASH: &str = "herald2";

/// `/openapi/v3`: one document per built-in group version.
pub(crate) fn openapi_v3_root(registry: &Registry) -> Value {
    let mut paths = serde_json::Map::new();
    for rt in registry.all().filter(|rt| rt.crd.is_none()) {
        for v in &rt.versions {
            let p = gv_path(&rt.id.group, v);
            paths.insert(
                p.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash={OPENAPI_HASH}")}),
            );
        }
    }
    json!({"paths": paths})
}

/// `/openapi/v3/{gv}`: a PATCH operation per kind advertising the `fieldValidation`
/// parameter (so kubectl validates on the server). No request body schema is given, so kubectl
/// computes strategic merge patches from its compiled-in types.
pub(crate) fn openapi_v3(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let types: Vec<_> = registry
        .in_group_version(group, version)
        .into_iter()
        .filter(|rt| rt.crd.is_none())
        .collect();
    if types.is_empty() {
        return None;
    }
    let mut paths = serde_json::Map::new();
    let base = format!("/{}", gv_path(group, version));
    let mut kinds: Vec<(String, String)> = types
        .iter()
        .map(|rt| {
            let path = if rt.namespaced {
                format!("{base}/namespaces/{{namespace}}/{}/{{name}}", rt.id.plural)
            } else {
                format!("{base}/{}/{{name}}", rt.id.plural)
            };
            (path, rt.kind.clone())
        })
        .collect();
    if group.is_empty() && version == "v1" {
        // kubectl checks `kind: List` manifests like any kind; without an entry it falls back
        // to the (protobuf-only) OpenAPI v2 document.
        kinds.push((format!("{base}/lists/{{name}}"), "List".into()));
    }
    for (path, kind) in kinds {
        paths.insert(
            path,
            json!({"patch": {
                "operationId": format!("patch{kind}"),
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": {"group": group, "version": version, "kind": kind},
                "parameters": [
                    {"name": "dryRun", "in": "query", "schema": {"type": "string"}},
                    {"name": "fieldManager", "in": "query", "schema": {"type": "string"}},
                    {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}},
                ],
                "responses": {"200": {"description": "OK"}},
            }}),
        );
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": GIT_VERSION},
        "paths": paths,
        "components": {"schemas": {}},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_resource_list_describes_pods_with_status_subresource() {
        let doc = resources(&Registry::new(), "", "v1").unwrap();
        let res = doc["resources"].as_array().unwrap();
        let pods = res.iter().find(|r| r["name"] == "pods").unwrap();
        assert_eq!(pods["kind"], "Pod");
        assert_eq!(pods["singularName"], "pod");
        assert_eq!(pods["namespaced"], true);
        assert_eq!(pods["shortNames"], json!(["po"]));
        assert!(res.iter().any(|r| r["name"] == "pods/status"));
        let ns = res.iter().find(|r| r["name"] == "namespaces").unwrap();
        assert_eq!(ns["namespaced"], false);
    }

    #[test]
    fn groups_list_every_builtin_group() {
        let doc = groups(&Registry::new());
        let names: Vec<&str> = doc["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["name"].as_str().unwrap())
            .collect();
        for g in [
            "apps",
            "batch",
            "coordination.k8s.io",
            "rbac.authorization.k8s.io",
            "apiextensions.k8s.io",
        ] {
            assert!(names.contains(&g), "{g} missing from {names:?}");
        }
        assert!(group(&Registry::new(), "nope").is_none());
    }
}
