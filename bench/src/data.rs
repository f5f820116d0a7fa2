//! Benchmark objects: the two Pods of `bench/data/` (4 KB and 16 KB, copied
//! from the project's shared bench data) and variations of them with their
//! own name, namespace, uid, resourceVersion and labels, optionally with
//! realistic `managedFields` and a write-time stamp.
//!
//! A [`PodTemplate`] serializes the Pod once with placeholders and renders
//! each variation by concatenation, so generating 100k objects takes well
//! under a second.

use herald::store::{CachedObject, Transform};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The 4 KB Pod.
pub const POD_4K: &str = include_str!("../data/pod-4k.json");
/// The 16 KB Pod.
pub const POD_16K: &str = include_str!("../data/pod-16k.json");

/// The annotation holding a write time (ns since the Unix epoch), as the
/// `latency-probe` fixture reads it.
pub const STAMP_ANNOTATION: &str = "herald.bench/written-ns";

/// Namespaces the variations are spread over.
pub const NAMESPACES: usize = 8;

/// Which Pod a variation is made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodSize {
    /// `pod-4k.json`.
    Small,
    /// `pod-16k.json`.
    Large,
}

impl PodSize {
    /// `4 KB` or `16 KB`.
    pub fn label(self) -> &'static str {
        match self {
            PodSize::Small => "4 KB",
            PodSize::Large => "16 KB",
        }
    }

    fn source(self) -> &'static str {
        match self {
            PodSize::Small => POD_4K,
            PodSize::Large => POD_16K,
        }
    }
}

/// What the variations carry besides the Pod's own fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Extras {
    /// `metadata.managedFields` as a real API server writes them (one entry
    /// per manager, `fieldsV1` following the object's own fields).
    pub managed_fields: bool,
    /// The [`STAMP_ANNOTATION`] annotation, with a value given at render time.
    pub stamp: bool,
}

enum Part {
    Text(String),
    Name,
    Namespace,
    Uid,
    ResourceVersion,
    Index,
    Shard,
    Stamp,
}

/// The placeholders a template is serialized with, in [`Part`] order.
const HOLES: [&str; 7] = [
    "@@NAME@@",
    "@@NAMESPACE@@",
    "@@UID@@",
    "@@RV@@",
    "@@INDEX@@",
    "@@SHARD@@",
    "@@STAMP@@",
];

/// The part that fills placeholder number `hole` of [`HOLES`].
fn hole_part(hole: usize) -> Part {
    match hole {
        0 => Part::Name,
        1 => Part::Namespace,
        2 => Part::Uid,
        3 => Part::ResourceVersion,
        4 => Part::Index,
        5 => Part::Shard,
        _ => Part::Stamp,
    }
}

/// One Pod, serialized once with holes for what varies.
pub struct PodTemplate {
    parts: Vec<Part>,
    base_name: String,
}

impl PodTemplate {
    /// The template of `size` with `extras`.
    pub fn new(size: PodSize, extras: Extras) -> Self {
        let mut pod: Value = serde_json::from_str(size.source()).expect("bench Pod is JSON");
        let base_name = pod["metadata"]["name"]
            .as_str()
            .expect("bench Pod has a name")
            .to_owned();
        if extras.managed_fields {
            let managed = managed_fields(&pod);
            pod["metadata"]["managedFields"] = managed;
        }
        let metadata = pod["metadata"].as_object_mut().expect("metadata");
        metadata.insert("name".into(), "@@NAME@@".into());
        metadata.insert("namespace".into(), "@@NAMESPACE@@".into());
        metadata.insert("uid".into(), "@@UID@@".into());
        metadata.insert("resourceVersion".into(), "@@RV@@".into());
        let labels = metadata
            .entry("labels")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .expect("labels");
        labels.insert("herald.bench/index".into(), "@@INDEX@@".into());
        labels.insert("herald.bench/shard".into(), "@@SHARD@@".into());
        if extras.stamp {
            metadata
                .entry("annotations")
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .expect("annotations")
                .insert(STAMP_ANNOTATION.into(), "@@STAMP@@".into());
        }
        let text = serde_json::to_string(&pod).expect("serializes");
        PodTemplate {
            parts: split(&text),
            base_name,
        }
    }

    /// The name of variation `index`.
    pub fn name(&self, index: usize) -> String {
        format!("{}-{index:06}", self.base_name)
    }

    /// The namespace of variation `index`.
    pub fn namespace(index: usize) -> String {
        format!("bench-{}", index % NAMESPACES)
    }

    /// Variation `index` at resourceVersion `rv`, stamped `stamp` (if the
    /// template has a stamp).
    pub fn render(&self, index: usize, rv: u64, stamp: u64) -> String {
        let mut out = String::with_capacity(self.len_hint());
        for part in &self.parts {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Name => out.push_str(&self.name(index)),
                Part::Namespace => out.push_str(&Self::namespace(index)),
                Part::Uid => out.push_str(&format!("00000000-0000-4000-8000-{index:012x}")),
                Part::ResourceVersion => out.push_str(&rv.to_string()),
                Part::Index => out.push_str(&index.to_string()),
                Part::Shard => out.push_str(&(index % 16).to_string()),
                Part::Stamp => out.push_str(&stamp.to_string()),
            }
        }
        out
    }

    fn len_hint(&self) -> usize {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Text(t) => t.len(),
                _ => 48,
            })
            .sum()
    }
}

fn split(text: &str) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut rest = text;
    loop {
        let next = HOLES
            .iter()
            .enumerate()
            .filter_map(|(hole, marker)| rest.find(marker).map(|at| (at, hole)))
            .min_by_key(|(at, _)| *at);
        match next {
            Some((at, hole)) => {
                parts.push(Part::Text(rest[..at].to_owned()));
                parts.push(hole_part(hole));
                rest = &rest[at + HOLES[hole].len()..];
            }
            None => {
                parts.push(Part::Text(rest.to_owned()));
                return parts;
            }
        }
    }
}

/// `managedFields` for `pod`: the controller that created it owns metadata
/// and spec, the kubelet owns status, as on a real cluster.
fn managed_fields(pod: &Value) -> Value {
    let mut metadata = pod["metadata"].clone();
    if let Some(map) = metadata.as_object_mut() {
        for own in [
            "name",
            "namespace",
            "uid",
            "resourceVersion",
            "creationTimestamp",
        ] {
            map.remove(own);
        }
    }
    let entry = |manager: &str, subresource: Option<&str>, fields: Value| {
        let mut entry = json!({
            "manager": manager,
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-11-01T10:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": fields,
        });
        if let Some(subresource) = subresource {
            entry["subresource"] = subresource.into();
        }
        entry
    };
    json!([
        entry(
            "kube-controller-manager",
            None,
            json!({"f:metadata": fields_v1(&metadata), "f:spec": fields_v1(&pod["spec"])})
        ),
        entry(
            "kubelet",
            Some("status"),
            json!({"f:status": fields_v1(&pod["status"])})
        ),
    ])
}

/// The `fieldsV1` set of `value`: `f:<key>` per field, `k:{"name":…}` per
/// named list item, `{}` for leaves.
fn fields_v1(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = Map::new();
            out.insert(".".into(), json!({}));
            for (key, item) in map {
                out.insert(format!("f:{key}"), fields_v1(item));
            }
            Value::Object(out)
        }
        Value::Array(items) => {
            let mut out = Map::new();
            for (position, item) in items.iter().enumerate() {
                let key = match item.get("name") {
                    Some(name) => format!("k:{{\"name\":{name}}}"),
                    None => format!("i:{position}"),
                };
                out.insert(key, fields_v1(item));
            }
            Value::Object(out)
        }
        _ => json!({}),
    }
}

/// `count` distinct cached Pods of `size` (no managedFields, no stamp), as
/// the host holds them after a list.
pub fn cached_pods(size: PodSize, count: usize) -> Vec<Arc<CachedObject>> {
    let template = PodTemplate::new(size, Extras::default());
    (0..count)
        .map(|i| {
            Arc::new(
                CachedObject::from_json(
                    &template.render(i, 1000 + i as u64, 0),
                    "v1",
                    "Pod",
                    Transform::default(),
                )
                .expect("bench Pods parse"),
            )
        })
        .collect()
}

/// Deployment `web-<i>` in `namespace`, of a realistic size for a
/// controller's primary object (1.2 KB of JSON): labels, annotations, a pod
/// template of two containers with resources, probes and environment, and a
/// status. B16 and B18 reconcile it.
pub fn deployment(namespace: &str, i: usize) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {
            "name": format!("web-{i}"), "namespace": namespace, "generation": 3,
            "labels": {"app.kubernetes.io/name": "web", "app.kubernetes.io/part-of": "shop", "tier": "frontend"},
            "annotations": {"deployment.kubernetes.io/revision": "3"},
        },
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app.kubernetes.io/name": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": {
                "metadata": {"labels": {"app.kubernetes.io/name": "web", "tier": "frontend"}},
                "spec": {"containers": [
                    {"name": "nginx", "image": "docker.io/library/nginx:1.27",
                     "ports": [{"name": "http", "containerPort": 80}],
                     "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
                     "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 5},
                     "env": [{"name": "MODE", "value": "production"}, {"name": "CART_URL", "value": "http://cart:8080"}]},
                    {"name": "envoy", "image": "docker.io/envoyproxy/envoy:v1.31.0",
                     "ports": [{"name": "admin", "containerPort": 9901}],
                     "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}}
                ]}
            }
        },
        "status": {"replicas": 3, "readyReplicas": 3, "availableReplicas": 3, "observedGeneration": 3}
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variations_differ_where_they_should_and_strip_to_the_plain_pod() {
        let with = PodTemplate::new(
            PodSize::Small,
            Extras {
                managed_fields: true,
                stamp: true,
            },
        );
        let plain = PodTemplate::new(
            PodSize::Small,
            Extras {
                managed_fields: false,
                stamp: true,
            },
        );
        let a: Value = serde_json::from_str(&with.render(7, 42, 99)).unwrap();
        assert_eq!(a["metadata"]["name"], format!("{}", with.name(7)));
        assert_eq!(a["metadata"]["namespace"], "bench-7");
        assert_eq!(a["metadata"]["resourceVersion"], "42");
        assert_eq!(a["metadata"]["labels"]["herald.bench/index"], "7");
        assert_eq!(a["metadata"]["annotations"][STAMP_ANNOTATION], "99");
        assert!(a["metadata"]["managedFields"].as_array().unwrap().len() == 2);
        let stripped =
            CachedObject::from_json(&with.render(7, 42, 99), "v1", "Pod", Transform::default())
                .unwrap();
        assert_eq!(stripped.json(), plain.render(7, 42, 99));
        assert!(plain.render(1, 1, 0).len() > 4000);
    }
}
