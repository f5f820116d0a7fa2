//! Protobuf request bodies, converted to the JSON the server stores (see the
//! [module above](super) for the mapping).

use base64::Engine as _;

use ::protobuf::MessageDyn;
use ::protobuf::reflect::{MessageDescriptor, ReflectFieldRef, ReflectValueRef};
use serde_json::{Map, Value};

use super::formats::{go_duration, timestamp};
use super::{MAGIC, MEDIA_TYPE, UNKNOWN, is_protobuf, message_for, message_named, names};
use crate::status::ApiError;

/// The string field `name` of `message` (empty when unset).
fn string_field(message: &dyn MessageDyn, name: &str) -> String {
    text(scalar(&message.descriptor_dyn(), message, name))
}

/// Decode a Kubernetes protobuf body into the object's JSON, `apiVersion` and `kind`
/// included. Errors are 400 for malformed bodies and 415 for kinds without a protobuf
/// definition here (custom resources, as on a real server, and groups the server lacks).
pub(crate) fn decode(body: &[u8]) -> Result<Value, ApiError> {
    let Some(envelope) = body.strip_prefix(MAGIC) else {
        return Err(ApiError::bad_request(
            "the protobuf body does not start with the Kubernetes magic bytes \"k8s\\x00\"",
        ));
    };
    let unknown = message_named(UNKNOWN)
        .parse_from_bytes(envelope)
        .map_err(|e| {
            ApiError::bad_request(format!("cannot decode the runtime.Unknown envelope: {e}"))
        })?;
    let field = |name: &str| scalar(&unknown.descriptor_dyn(), &*unknown, name);
    let (api_version, kind) = match field("typeMeta") {
        Some(ReflectValueRef::Message(type_meta)) => (
            string_field(&*type_meta, "apiVersion"),
            string_field(&*type_meta, "kind"),
        ),
        _ => (String::new(), String::new()),
    };
    let content_encoding = string_field(&*unknown, "contentEncoding");
    let content_type = string_field(&*unknown, "contentType");
    if kind.is_empty() {
        return Err(ApiError::bad_request(
            "the protobuf envelope names no kind (typeMeta.kind is empty)",
        ));
    }
    if !content_encoding.is_empty() {
        return Err(
            ApiError::unsupported_media_type(MEDIA_TYPE).with_hint(&format!(
                "the {kind} body has content encoding {content_encoding:?}, which this server \
                 does not decode"
            )),
        );
    }
    match content_type.as_str() {
        "" => {}
        ct if is_protobuf(ct) => {}
        ct => {
            return Err(
                ApiError::unsupported_media_type(MEDIA_TYPE).with_hint(&format!(
                    "the {kind} body in the protobuf envelope has content type {ct:?}"
                )),
            );
        }
    }
    let Some(descriptor) = message_for(&api_version, &kind) else {
        return Err(
            ApiError::unsupported_media_type(MEDIA_TYPE).with_hint(&format!(
                "this server has no protobuf definition for kind {kind} in {api_version:?} \
             (custom resources and groups it does not serve take JSON or YAML only)"
            )),
        );
    };
    let raw = match field("raw") {
        Some(ReflectValueRef::Bytes(b)) => b,
        _ => &[],
    };
    let message = descriptor.parse_from_bytes(raw).map_err(|e| {
        ApiError::bad_request(format!(
            "cannot decode the protobuf {api_version} {kind}: {e}"
        ))
    })?;
    let mut obj = match to_json(&*message)? {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let mut out = Map::new();
    out.insert("apiVersion".into(), Value::String(api_version));
    out.insert("kind".into(), Value::String(kind));
    out.append(&mut obj);
    Ok(Value::Object(out))
}

/// The Kubernetes JSON of one message.
fn to_json(message: &dyn MessageDyn) -> Result<Value, ApiError> {
    let descriptor = message.descriptor_dyn();
    if let Some(special) = special(&descriptor, message)? {
        return Ok(special);
    }
    let mut out = Map::new();
    fields_json(message, &mut out)?;
    Ok(Value::Object(out))
}

/// Writes the fields of `message` into `out`, those of inline structs among them.
fn fields_json(message: &dyn MessageDyn, out: &mut Map<String, Value>) -> Result<(), ApiError> {
    let descriptor = message.descriptor_dyn();
    let owner = descriptor.full_name();
    for field in descriptor.fields() {
        let value = match field.get_reflect(message) {
            ReflectFieldRef::Optional(opt) => match opt.value() {
                None => continue,
                Some(ReflectValueRef::String("")) => continue,
                Some(ReflectValueRef::Message(inner)) if names::is_inline(owner, field.name()) => {
                    fields_json(&*inner, out)?;
                    continue;
                }
                Some(v) => value_json(v)?,
            },
            ReflectFieldRef::Repeated(list) => {
                if list.is_empty() {
                    continue;
                }
                Value::Array(list.into_iter().map(value_json).collect::<Result<_, _>>()?)
            }
            ReflectFieldRef::Map(map) => {
                if map.is_empty() {
                    continue;
                }
                let mut obj = Map::new();
                for (k, v) in &map {
                    let key = match k {
                        ReflectValueRef::String(s) => s.to_string(),
                        other => other.to_string(),
                    };
                    obj.insert(key, value_json(v)?);
                }
                Value::Object(obj)
            }
        };
        out.insert(names::json_name(owner, field.name()).to_string(), value);
    }
    Ok(())
}

/// The JSON of one scalar or message value.
fn value_json(value: ReflectValueRef<'_>) -> Result<Value, ApiError> {
    Ok(match value {
        ReflectValueRef::U32(v) => v.into(),
        ReflectValueRef::U64(v) => v.into(),
        ReflectValueRef::I32(v) => v.into(),
        ReflectValueRef::I64(v) => v.into(),
        ReflectValueRef::F32(v) => f64::from(v).into(),
        ReflectValueRef::F64(v) => v.into(),
        ReflectValueRef::Bool(v) => v.into(),
        ReflectValueRef::String(s) => s.into(),
        ReflectValueRef::Bytes(b) => base64::engine::general_purpose::STANDARD.encode(b).into(),
        ReflectValueRef::Enum(d, n) => match d.value_by_number(n) {
            Some(v) => v.name().into(),
            None => n.into(),
        },
        ReflectValueRef::Message(m) => to_json(&*m)?,
    })
}

/// A field of `message` by name, as a scalar (unset gives the type's zero).
fn scalar<'a>(
    descriptor: &MessageDescriptor,
    message: &'a dyn MessageDyn,
    name: &str,
) -> Option<ReflectValueRef<'a>> {
    descriptor
        .field_by_name(name)
        .map(|f| f.get_singular_field_or_default(message))
}

fn int(v: Option<ReflectValueRef<'_>>) -> i64 {
    match v {
        Some(ReflectValueRef::I32(n)) => n.into(),
        Some(ReflectValueRef::I64(n)) => n,
        _ => 0,
    }
}

fn text(v: Option<ReflectValueRef<'_>>) -> String {
    match v {
        Some(ReflectValueRef::String(s)) => s.to_string(),
        _ => String::new(),
    }
}

/// The JSON of the types whose JSON is not their message shape, by message name.
fn special(descriptor: &MessageDescriptor, m: &dyn MessageDyn) -> Result<Option<Value>, ApiError> {
    let full = descriptor.full_name();
    let field = |name: &str| scalar(descriptor, m, name);
    let raw_json = || -> Result<Value, ApiError> {
        match super::raw_field(descriptor).get_singular_field_or_default(m) {
            ReflectValueRef::Bytes(b) => raw_to_json(b, full),
            _ => Ok(Value::Null),
        }
    };
    Ok(Some(match full {
        "apimachinery.pkg.api.resource.Quantity" => Value::String(text(field("string"))),
        "apimachinery.pkg.util.intstr.IntOrString" => {
            if int(field("type")) == 1 {
                Value::String(text(field("strVal")))
            } else {
                Value::from(int(field("intVal")))
            }
        }
        "apimachinery.pkg.apis.meta.v1.Time" => {
            timestamp(int(field("seconds")), int(field("nanos")), false)
        }
        "apimachinery.pkg.apis.meta.v1.MicroTime" => {
            timestamp(int(field("seconds")), int(field("nanos")), true)
        }
        "apimachinery.pkg.apis.meta.v1.Duration" => {
            Value::String(go_duration(int(field("duration"))))
        }
        "apimachinery.pkg.runtime.RawExtension" | "apimachinery.pkg.apis.meta.v1.FieldsV1" => {
            raw_json()?
        }
        "apiextensions_apiserver.pkg.apis.apiextensions.v1.JSON" => raw_json()?,
        // Go's MarshalJSON of these: the list if it has items, else the schema if set, else
        // `null` (or the boolean).
        "apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray" => {
            match list_json(descriptor, m, "jSONSchemas")? {
                Some(list) => list,
                None => set_json(descriptor, m, "schema")?.unwrap_or(Value::Null),
            }
        }
        "apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray" => {
            match list_json(descriptor, m, "property")? {
                Some(list) => list,
                None => set_json(descriptor, m, "schema")?.unwrap_or(Value::Null),
            }
        }
        "apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool" => {
            match set_json(descriptor, m, "schema")? {
                Some(schema) => schema,
                None => Value::Bool(matches!(field("allows"), Some(ReflectValueRef::Bool(true)))),
            }
        }
        _ => return Ok(None),
    }))
}

/// The JSON of the repeated field `name` of `m`, `None` when it has no items.
fn list_json(
    descriptor: &MessageDescriptor,
    m: &dyn MessageDyn,
    name: &str,
) -> Result<Option<Value>, ApiError> {
    let Some(field) = descriptor.field_by_name(name) else {
        return Ok(None);
    };
    match field.get_reflect(m) {
        ReflectFieldRef::Repeated(list) if !list.is_empty() => Ok(Some(Value::Array(
            list.into_iter().map(value_json).collect::<Result<_, _>>()?,
        ))),
        _ => Ok(None),
    }
}

/// The JSON of the singular field `name` of `m`, `None` when it is not set.
fn set_json(
    descriptor: &MessageDescriptor,
    m: &dyn MessageDyn,
    name: &str,
) -> Result<Option<Value>, ApiError> {
    match descriptor
        .field_by_name(name)
        .and_then(|f| f.get_singular(m))
    {
        Some(value) => value_json(value).map(Some),
        None => Ok(None),
    }
}

/// JSON bytes (or a nested protobuf object) held by a raw field.
fn raw_to_json(bytes: &[u8], type_name: &str) -> Result<Value, ApiError> {
    if bytes.is_empty() {
        return Ok(Value::Null);
    }
    if bytes.starts_with(MAGIC) {
        return decode(bytes);
    }
    serde_json::from_slice(bytes).map_err(|e| {
        ApiError::bad_request(format!(
            "the raw JSON of a protobuf {type_name} is invalid: {e}"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use ::protobuf::reflect::{ReflectValueBox, RuntimeFieldType, RuntimeType};
    use serde_json::json;

    /// A value of type `ty` from its test JSON: bytes are a string or a list of numbers,
    /// messages are objects built by [`message`].
    fn value(ty: &RuntimeType, v: &Value) -> ReflectValueBox {
        match ty {
            RuntimeType::I32 => ReflectValueBox::I32(v.as_i64().unwrap().try_into().unwrap()),
            RuntimeType::I64 => ReflectValueBox::I64(v.as_i64().unwrap()),
            RuntimeType::Bool => ReflectValueBox::Bool(v.as_bool().unwrap()),
            RuntimeType::String => ReflectValueBox::String(v.as_str().unwrap().to_string()),
            RuntimeType::VecU8 => ReflectValueBox::Bytes(match v {
                Value::String(s) => s.as_bytes().to_vec(),
                _ => v
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|b| u8::try_from(b.as_u64().unwrap()).unwrap())
                    .collect(),
            }),
            RuntimeType::Message(d) => ReflectValueBox::Message(build(d, v)),
            other => panic!("no test JSON for {other}"),
        }
    }

    /// A dynamic message of type `descriptor` whose fields are the keys of `fields`.
    fn build(descriptor: &MessageDescriptor, fields: &Value) -> Box<dyn MessageDyn> {
        let mut m = descriptor.new_instance();
        for (name, v) in fields.as_object().unwrap() {
            let field = descriptor
                .field_by_name(name)
                .unwrap_or_else(|| panic!("{} has no field {name}", descriptor.full_name()));
            match field.runtime_field_type() {
                RuntimeFieldType::Singular(ty) => field.set_singular_field(&mut *m, value(&ty, v)),
                RuntimeFieldType::Repeated(ty) => {
                    let mut list = field.mut_repeated(&mut *m);
                    for item in v.as_array().unwrap() {
                        list.push(value(&ty, item));
                    }
                }
                RuntimeFieldType::Map(k, ty) => {
                    let mut map = field.mut_map(&mut *m);
                    for (key, item) in v.as_object().unwrap() {
                        map.insert(value(&k, &Value::String(key.clone())), value(&ty, item));
                    }
                }
            }
        }
        m
    }

    /// The wire bytes of the message `full_name` with `fields`.
    fn message(full_name: &str, fields: Value) -> Vec<u8> {
        build(&message_named(full_name), &fields)
            .write_to_bytes_dyn()
            .unwrap()
    }

    /// A body as kubectl sends it: magic, then `Unknown` wrapping the message `raw`.
    fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
        let mut body = MAGIC.to_vec();
        body.extend(message(
            "apimachinery.pkg.runtime.Unknown",
            json!({"typeMeta": {"apiVersion": api_version, "kind": kind}, "raw": raw}),
        ));
        body
    }

    /// Metadata as kubectl's generators send it: an empty namespace, a zero creation time.
    fn meta(name: &str) -> Value {
        json!({"name": name, "namespace": "", "labels": {"app": "web"}, "creationTimestamp": {}})
    }

    #[test]
    fn a_secret_decodes_with_base64_data_and_a_null_zero_time() {
        let s = message(
            "api.core.v1.Secret",
            json!({"metadata": meta("s"), "data": {"k": [b'v', 0, 0xff]},
                   "type": "Opaque", "immutable": false}),
        );
        let obj = decode(&envelope("v1", "Secret", s)).unwrap();
        assert_eq!(
            obj,
            json!({
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "s", "labels": {"app": "web"}, "creationTimestamp": null},
                "data": {"k": "dgD/"}, "type": "Opaque", "immutable": false,
            })
        );
    }

    #[test]
    fn quantities_int_or_strings_and_times_take_their_json_forms() {
        let mut m = meta("web");
        m["creationTimestamp"] = json!({"seconds": 1_700_000_000});
        let container = json!({
            "name": "nginx", "image": "nginx",
            "resources": {"limits": {"cpu": {"string": "100m"}}},
            "ports": [{"containerPort": 80}],
        });
        let d = message(
            "api.apps.v1.Deployment",
            json!({"metadata": m, "spec": {
                "replicas": 0,
                "strategy": {"rollingUpdate": {"maxSurge": {"type": 1, "strVal": "25%"}}},
                "template": {"spec": {"containers": [container]}},
            }}),
        );
        let obj = decode(&envelope("apps/v1", "Deployment", d)).unwrap();
        assert_eq!(obj["metadata"]["creationTimestamp"], "2023-11-14T22:13:20Z");
        assert_eq!(obj["spec"]["replicas"], 0);
        assert_eq!(
            obj["spec"]["strategy"]["rollingUpdate"],
            json!({"maxSurge": "25%"})
        );
        let container = &obj["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(container["resources"], json!({"limits": {"cpu": "100m"}}));
        assert_eq!(container["ports"], json!([{"containerPort": 80}]));

        let svc = message(
            "api.core.v1.Service",
            json!({"spec": {"ports": [
                {"port": 80, "targetPort": {"type": 0, "intVal": 8080}},
            ]}}),
        );
        let obj = decode(&envelope("v1", "Service", svc)).unwrap();
        assert_eq!(
            obj["spec"]["ports"],
            json!([{"port": 80, "targetPort": 8080}])
        );
    }

    #[test]
    fn the_envelope_content_type_and_encoding_are_checked() {
        let mut body = MAGIC.to_vec();
        body.extend(message(
            "apimachinery.pkg.runtime.Unknown",
            json!({"typeMeta": {"apiVersion": "v1", "kind": "Secret"},
                   "contentType": "application/json"}),
        ));
        assert_eq!(decode(&body).unwrap_err().code, 415);
        let mut body = MAGIC.to_vec();
        body.extend(message(
            "apimachinery.pkg.runtime.Unknown",
            json!({"typeMeta": {"apiVersion": "v1", "kind": "Secret"},
                   "contentEncoding": "gzip"}),
        ));
        assert_eq!(decode(&body).unwrap_err().code, 415);
        let mut body = MAGIC.to_vec();
        body.extend(message(
            "apimachinery.pkg.runtime.Unknown",
            json!({"typeMeta": {"apiVersion": "v1"}}),
        ));
        assert_eq!(decode(&body).unwrap_err().code, 400);
    }

    #[test]
    fn kinds_without_a_definition_are_415_naming_the_kind() {
        let secret = || message("api.core.v1.Secret", json!({}));
        let err = decode(&envelope("example.com/v1", "Widget", secret())).unwrap_err();
        assert_eq!(err.code, 415);
        assert!(err.message.contains("Widget"), "{}", err.message);
        let err = decode(&envelope("v1", "Gadget", secret())).unwrap_err();
        assert_eq!(err.code, 415);
        assert!(err.message.contains("Gadget"), "{}", err.message);
    }

    #[test]
    fn malformed_bodies_are_400() {
        assert_eq!(decode(b"{}").unwrap_err().code, 400);
        assert_eq!(decode(b"k8s\0\xff\xff").unwrap_err().code, 400);
    }

    #[test]
    fn the_content_type_is_recognised_with_parameters() {
        assert!(is_protobuf(
            "application/vnd.kubernetes.protobuf; charset=utf-8"
        ));
        assert!(!is_protobuf("application/json"));
    }
}
