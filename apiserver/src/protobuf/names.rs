//! Where a message's JSON keys live in its protobuf message: the Go structs embedded inline
//! in JSON but carried as a field of their own in protobuf, and the fields whose JSON name
//! is not their protobuf name. The `.proto` files record neither (they are Go struct tags:
//! `json:",inline"` next to `protobuf:"bytes,2,opt,name=volumeSource"`, `json:"$ref"` next to
//! `name=ref`), so they are listed here for the groups `build.rs` compiles; a test below
//! checks the lists against every Go struct Herald's generated schema describes.

use std::collections::HashMap;
use std::sync::OnceLock;

use ::protobuf::reflect::{FieldDescriptor, MessageDescriptor, RuntimeFieldType, RuntimeType};

/// `(message, field)`: a struct embedded inline in JSON, a message field in protobuf.
pub const INLINE: &[(&str, &str)] = &[
    ("api.core.v1.ConfigMapEnvSource", "localObjectReference"),
    ("api.core.v1.ConfigMapKeySelector", "localObjectReference"),
    ("api.core.v1.ConfigMapProjection", "localObjectReference"),
    ("api.core.v1.ConfigMapVolumeSource", "localObjectReference"),
    ("api.core.v1.EphemeralContainer", "ephemeralContainerCommon"),
    ("api.core.v1.PersistentVolumeSpec", "persistentVolumeSource"),
    ("api.core.v1.Probe", "handler"),
    ("api.core.v1.SecretEnvSource", "localObjectReference"),
    ("api.core.v1.SecretKeySelector", "localObjectReference"),
    ("api.core.v1.SecretProjection", "localObjectReference"),
    ("api.core.v1.Volume", "volumeSource"),
    ("api.networking.v1.IngressRule", "ingressRuleValue"),
    ("api.admissionregistration.v1.RuleWithOperations", "rule"),
    (
        "api.admissionregistration.v1.NamedRuleWithOperations",
        "ruleWithOperations",
    ),
];

/// The apiextensions `JSONSchemaProps`, whose JSON names follow JSON Schema.
const SCHEMA_PROPS: &str = "apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps";

/// `(message, protobuf name, JSON name)`: a field whose JSON name differs.
pub const RENAMED: &[(&str, &str, &str)] = &[
    (
        "api.admissionregistration.v1.MutatingWebhookConfiguration",
        "Webhooks",
        "webhooks",
    ),
    (
        "api.admissionregistration.v1.ValidatingWebhookConfiguration",
        "Webhooks",
        "webhooks",
    ),
    (
        "api.admissionregistration.v1.Validation",
        "Expression",
        "expression",
    ),
    ("api.admissionregistration.v1.Variable", "Name", "name"),
    (
        "api.admissionregistration.v1.Variable",
        "Expression",
        "expression",
    ),
    (
        "api.networking.v1.IngressClassParametersReference",
        "aPIGroup",
        "apiGroup",
    ),
    (SCHEMA_PROPS, "ref", "$ref"),
    (SCHEMA_PROPS, "schema", "$schema"),
    (
        SCHEMA_PROPS,
        "xKubernetesPreserveUnknownFields",
        "x-kubernetes-preserve-unknown-fields",
    ),
    (
        SCHEMA_PROPS,
        "xKubernetesEmbeddedResource",
        "x-kubernetes-embedded-resource",
    ),
    (
        SCHEMA_PROPS,
        "xKubernetesIntOrString",
        "x-kubernetes-int-or-string",
    ),
    (
        SCHEMA_PROPS,
        "xKubernetesListMapKeys",
        "x-kubernetes-list-map-keys",
    ),
    (
        SCHEMA_PROPS,
        "xKubernetesListType",
        "x-kubernetes-list-type",
    ),
    (SCHEMA_PROPS, "xKubernetesMapType", "x-kubernetes-map-type"),
    (
        SCHEMA_PROPS,
        "xKubernetesValidations",
        "x-kubernetes-validations",
    ),
];

/// Whether `field` of `message` is a struct embedded inline in JSON.
pub(crate) fn is_inline(message: &str, field: &str) -> bool {
    INLINE.iter().any(|(m, f)| *m == message && *f == field)
}

/// The JSON name of `field` of `message`.
pub(crate) fn json_name<'a>(message: &str, field: &'a str) -> &'a str {
    RENAMED
        .iter()
        .find(|(m, f, _)| *m == message && *f == field)
        .map_or(field, |(_, _, json)| json)
}

/// The fields leading from a message to the one holding a JSON key's value: the inline
/// structs it sits in, outermost first, then the field itself.
pub(crate) type Route = Vec<FieldDescriptor>;

/// The route of each JSON key of `message`.
pub(crate) fn routes(message: &MessageDescriptor) -> &'static HashMap<String, Route> {
    static ALL: OnceLock<HashMap<String, HashMap<String, Route>>> = OnceLock::new();
    let all = ALL.get_or_init(|| {
        let mut all = HashMap::new();
        for file in super::files() {
            for message in file.messages() {
                all.insert(message.full_name().to_string(), routes_of(&message));
            }
        }
        all
    });
    static NONE: OnceLock<HashMap<String, Route>> = OnceLock::new();
    all.get(message.full_name())
        .unwrap_or_else(|| NONE.get_or_init(HashMap::new))
}

fn routes_of(message: &MessageDescriptor) -> HashMap<String, Route> {
    let mut out = HashMap::new();
    let owner = message.full_name();
    for field in message.fields() {
        let inline = match field.runtime_field_type() {
            RuntimeFieldType::Singular(RuntimeType::Message(inner))
                if is_inline(owner, field.name()) =>
            {
                Some(inner)
            }
            _ => None,
        };
        match inline {
            Some(inner) => {
                for (key, mut route) in routes_of(&inner) {
                    route.insert(0, field.clone());
                    out.entry(key).or_insert(route);
                }
            }
            None => {
                out.insert(
                    json_name(owner, field.name()).to_string(),
                    vec![field.clone()],
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_field_exists_and_inline_ones_are_messages() {
        for (message, field) in INLINE {
            let descriptor = super::super::message_named(message);
            let f = descriptor
                .field_by_name(field)
                .unwrap_or_else(|| panic!("{message} has no field {field}"));
            assert!(
                matches!(
                    f.runtime_field_type(),
                    RuntimeFieldType::Singular(RuntimeType::Message(_))
                ),
                "{message}.{field} is not a message"
            );
        }
        for (message, field, _) in RENAMED {
            let descriptor = super::super::message_named(message);
            assert!(
                descriptor.field_by_name(field).is_some(),
                "{message} has no field {field}"
            );
        }
    }

    #[test]
    fn an_inline_structs_keys_route_through_its_field() {
        let volume = super::super::message_named("api.core.v1.Volume");
        let volume_routes = routes(&volume);
        let names = |key: &str| -> Vec<String> {
            volume_routes[key]
                .iter()
                .map(|f| f.name().to_string())
                .collect()
        };
        assert_eq!(names("name"), ["name"]);
        assert_eq!(names("emptyDir"), ["volumeSource", "emptyDir"]);
        assert!(!volume_routes.contains_key("volumeSource"));
        let props = super::super::message_named(SCHEMA_PROPS);
        assert_eq!(routes(&props)["$ref"][0].name(), "ref");
    }

    /// The protobuf message of a Go struct in Herald's schema (`k8s.io/api/core/v1.Volume`
    /// is `api.core.v1.Volume`), if `build.rs` compiles it.
    fn compiled(go_id: &str) -> Option<MessageDescriptor> {
        let name = go_id
            .strip_prefix("k8s.io/")?
            .replace("apiextensions-apiserver", "apiextensions_apiserver")
            .replace('/', ".");
        let (package, message) = name.rsplit_once('.')?;
        super::super::files()
            .iter()
            .filter(|f| f.package() == package)
            .find_map(|f| f.message_by_package_relative_name(message))
    }

    #[test]
    fn the_lists_match_the_go_types_as_herald_s_schema_describes_them() {
        let schema = &*herald::informer::protobuf::schema::BUILT_IN;
        let (mut checked, mut inline_seen) = (0, Vec::new());
        for message in &schema.messages {
            let Some(descriptor) = compiled(&message.id) else {
                continue;
            };
            let owner = descriptor.full_name().to_string();
            for go in &message.fields {
                // Fields newer than the compiled definitions, and TypeMeta, are not on the
                // wire here.
                let Some(field) = (go.number > 0)
                    .then(|| descriptor.field_by_number(go.number))
                    .flatten()
                else {
                    continue;
                };
                checked += 1;
                if go.inline {
                    assert!(
                        is_inline(&owner, field.name()),
                        "{owner}.{} is inline in Go: list it in INLINE",
                        field.name()
                    );
                    inline_seen.push((owner.clone(), field.name().to_string()));
                } else {
                    assert!(!is_inline(&owner, field.name()), "{owner}.{}", field.name());
                    assert_eq!(
                        json_name(&owner, field.name()),
                        &*go.name,
                        "the JSON name of {owner}.{}: list it in RENAMED",
                        field.name()
                    );
                }
            }
        }
        assert!(checked > 1_000, "only {checked} fields compared");
        for (message, field) in INLINE {
            assert!(
                inline_seen.iter().any(|(m, f)| m == message && f == field),
                "{message}.{field} is listed as inline but is not in Go"
            );
        }
    }
}
