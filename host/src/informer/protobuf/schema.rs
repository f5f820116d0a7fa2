//! The schema of the built-in kinds' protobuf: for each Go struct, its
//! fields in declaration order with their protobuf numbers, JSON names and
//! `omitempty` rules. Generated from the Go types by
//! `tools/k8s-proto-schema` into `schema.json`, read once.

use serde::Deserialize;
use std::collections::HashMap;
use std::sync::LazyLock;

/// The schema compiled into Herald.
pub static BUILT_IN: LazyLock<Schema> = LazyLock::new(|| {
    Schema::parse(include_str!("schema.json")).expect("the generated schema.json is valid")
});

/// A schema file that cannot be used; each variant names the message,
/// field or kind at fault.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// The text is not a schema file.
    #[error("{0}")]
    Syntax(#[from] serde_json::Error),
    /// A field of a message cannot be resolved.
    #[error("{message}: {reason}")]
    Field {
        /// The message's Go id.
        message: String,
        /// What is wrong with the field.
        #[source]
        reason: FieldError,
    },
    /// A message has two fields with the same number.
    #[error("{message}: field number {number} twice")]
    DuplicateNumber {
        /// The message's Go id.
        message: String,
        /// The number given twice.
        number: u32,
    },
    /// A message has more fields than an index holds.
    #[error("{0}: too many fields")]
    TooManyFields(String),
    /// A kind names a message the schema lacks.
    #[error("kind {kind} names the unknown message {message}")]
    UnknownKindMessage {
        /// The kind.
        kind: String,
        /// The Go id it names.
        message: String,
    },
    /// A message every object needs is missing.
    #[error("the schema lacks {0}")]
    Missing(&'static str),
}

/// A field of a schema file that cannot be resolved; each variant holds
/// the field's JSON name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldError {
    /// Its type names a message the schema lacks.
    #[error("field {field:?} names the unknown message {message}")]
    UnknownMessage {
        /// The field.
        field: String,
        /// The Go id it names.
        message: String,
    },
    /// Its type is none of the known ones.
    #[error("field {field:?} has the unknown type {type_name}")]
    UnknownType {
        /// The field.
        field: String,
        /// The type at fault.
        type_name: String,
    },
    /// Its container is not `list` or `map`.
    #[error("field {field:?}: unknown container {container}")]
    UnknownContainer {
        /// The field.
        field: String,
        /// The container at fault.
        container: String,
    },
    /// Its omit rule is not `empty`, `zero` or `empty+zero`.
    #[error("field {field:?}: unknown omit rule {rule}")]
    UnknownOmit {
        /// The field.
        field: String,
        /// The rule at fault.
        rule: String,
    },
    /// It is inlined but not a message.
    #[error("field {field:?}: inline field of type {type_name}")]
    InlineNotMessage {
        /// The field.
        field: String,
        /// Its type.
        type_name: String,
    },
}

/// Where a message sits in [`Schema::messages`].
pub type MessageIndex = u32;

/// A value's type, as Go's `encoding/json` writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    /// `string` (and named strings).
    String,
    /// `bool`.
    Bool,
    /// `int32` (varint, sign-extended).
    Int32,
    /// `int64` and `int`.
    Int64,
    /// `uint32`.
    Uint32,
    /// `uint64`.
    Uint64,
    /// `float32` (fixed32).
    Float32,
    /// `float64` (fixed64).
    Float64,
    /// `[]byte`: base64 in JSON.
    Bytes,
    /// `metav1.Time`: RFC 3339, whole seconds.
    Time,
    /// `metav1.MicroTime`: RFC 3339 with microseconds.
    MicroTime,
    /// `metav1.Duration`: Go's duration text.
    Duration,
    /// `resource.Quantity`: its canonical string.
    Quantity,
    /// `intstr.IntOrString`: a number or a string.
    IntOrString,
    /// `runtime.RawExtension`: embedded JSON.
    RawExtension,
    /// `metav1.FieldsV1`: embedded JSON.
    FieldsV1,
    /// Any other struct.
    Message(MessageIndex),
}

/// Whether a field holds one value, a list or a map from strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Container {
    /// One value.
    Single,
    /// A Go slice: a repeated field.
    List,
    /// A Go map with string keys: repeated key/value entries.
    Map,
}

/// When `encoding/json` leaves a field out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Omit {
    /// `omitempty`: false, 0, "", nil, and empty lists and maps.
    pub empty: bool,
    /// `omitzero`: the type's zero value (a zero time, say).
    pub zero: bool,
}

/// One field of a message.
#[derive(Debug, Clone)]
pub struct Field {
    /// `"name":`, ready to write; empty for an inline field.
    pub key: Box<str>,
    /// The JSON name alone.
    pub name: Box<str>,
    /// The protobuf field number; 0 for a field never on the wire.
    pub number: u32,
    /// The value's type.
    pub value: ValueType,
    /// One value, a list or a map.
    pub container: Container,
    /// A Go pointer: absent means nil, not the zero value.
    pub pointer: bool,
    /// When the field is left out.
    pub omit: Omit,
    /// An embedded struct whose fields JSON writes into this object.
    pub inline: bool,
}

/// One Go struct.
#[derive(Debug)]
pub struct Message {
    /// `<Go package>.<Type>`.
    pub id: String,
    /// Its fields in declaration order (the order JSON writes them).
    pub fields: Vec<Field>,
    /// The index into `fields` of each protobuf field number.
    by_number: Vec<Option<u16>>,
}

impl Message {
    /// The field with protobuf number `number`.
    pub fn field_index(&self, number: u32) -> Option<usize> {
        self.by_number
            .get(number as usize)
            .copied()
            .flatten()
            .map(usize::from)
    }
}

/// Every message of the built-in kinds, and which kind is which message.
#[derive(Debug)]
pub struct Schema {
    /// What the schema was generated from.
    pub source: String,
    /// The messages, addressed by [`MessageIndex`].
    pub messages: Vec<Message>,
    kinds: HashMap<(String, String, String), MessageIndex>,
    by_id: HashMap<String, MessageIndex>,
}

/// `metav1.TypeMeta`: the kind and apiVersion, set from the envelope.
pub const TYPE_META: &str = "k8s.io/apimachinery/pkg/apis/meta/v1.TypeMeta";
/// `metav1.ObjectMeta`, whose `managedFields` the cache may drop.
pub const OBJECT_META: &str = "k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta";
/// `metav1.Status`: error answers and watch errors.
pub const STATUS: &str = "k8s.io/apimachinery/pkg/apis/meta/v1.Status";

#[derive(Deserialize)]
struct SchemaFile {
    source: String,
    kinds: Vec<(String, String, String, String)>,
    messages: HashMap<String, Vec<FieldFile>>,
}

#[derive(Deserialize)]
struct FieldFile {
    #[serde(default)]
    n: String,
    #[serde(default)]
    p: u32,
    t: String,
    #[serde(default)]
    c: Option<String>,
    #[serde(default)]
    ptr: bool,
    #[serde(default)]
    o: Option<String>,
    #[serde(default)]
    i: bool,
}

impl Schema {
    /// Reads a schema in the generator's format, checking that every
    /// reference resolves.
    pub fn parse(text: &str) -> Result<Schema, SchemaError> {
        let file: SchemaFile = serde_json::from_str(text)?;
        let mut ids: Vec<&String> = file.messages.keys().collect();
        ids.sort();
        let by_id: HashMap<String, MessageIndex> = ids
            .iter()
            .enumerate()
            .map(|(index, id)| ((*id).clone(), index as MessageIndex))
            .collect();
        let mut messages = Vec::with_capacity(ids.len());
        for id in ids {
            let fields = file.messages[id]
                .iter()
                .map(|field| {
                    resolve(field, &by_id).map_err(|reason| SchemaError::Field {
                        message: id.clone(),
                        reason,
                    })
                })
                .collect::<Result<Vec<Field>, SchemaError>>()?;
            let top = fields.iter().map(|f| f.number).max().unwrap_or(0) as usize;
            let mut by_number = vec![None; top + 1];
            for (index, field) in fields.iter().enumerate() {
                if field.number > 0 {
                    let slot = &mut by_number[field.number as usize];
                    if slot.is_some() {
                        return Err(SchemaError::DuplicateNumber {
                            message: id.clone(),
                            number: field.number,
                        });
                    }
                    *slot = Some(
                        u16::try_from(index).map_err(|_| SchemaError::TooManyFields(id.clone()))?,
                    );
                }
            }
            messages.push(Message {
                id: id.clone(),
                fields,
                by_number,
            });
        }
        let mut kinds = HashMap::new();
        for (group, version, kind, id) in file.kinds {
            let index = *by_id
                .get(&id)
                .ok_or_else(|| SchemaError::UnknownKindMessage {
                    kind: kind.clone(),
                    message: id.clone(),
                })?;
            kinds.insert((group, version, kind), index);
        }
        for required in [TYPE_META, OBJECT_META, STATUS] {
            if !by_id.contains_key(required) {
                return Err(SchemaError::Missing(required));
            }
        }
        Ok(Schema {
            source: file.source,
            messages,
            kinds,
            by_id,
        })
    }

    /// The message of a built-in kind, `None` for kinds the schema does not
    /// have (custom resources, aggregated APIs).
    pub fn kind(&self, group: &str, version: &str, kind: &str) -> Option<MessageIndex> {
        self.kinds
            .get(&(group.to_owned(), version.to_owned(), kind.to_owned()))
            .copied()
    }

    /// The message with Go id `id`.
    pub fn message_id(&self, id: &str) -> Option<MessageIndex> {
        self.by_id.get(id).copied()
    }

    /// The message at `index`.
    pub fn message(&self, index: MessageIndex) -> &Message {
        &self.messages[index as usize]
    }

    /// How many kinds the schema knows.
    pub fn kind_count(&self) -> usize {
        self.kinds.len()
    }
}

fn resolve(field: &FieldFile, by_id: &HashMap<String, MessageIndex>) -> Result<Field, FieldError> {
    let value = match field.t.as_str() {
        "string" => ValueType::String,
        "bool" => ValueType::Bool,
        "int32" => ValueType::Int32,
        "int64" => ValueType::Int64,
        "uint32" => ValueType::Uint32,
        "uint64" => ValueType::Uint64,
        "float32" => ValueType::Float32,
        "float64" => ValueType::Float64,
        "bytes" => ValueType::Bytes,
        "time" => ValueType::Time,
        "microtime" => ValueType::MicroTime,
        "duration" => ValueType::Duration,
        "quantity" => ValueType::Quantity,
        "intorstring" => ValueType::IntOrString,
        "rawextension" => ValueType::RawExtension,
        "fieldsv1" => ValueType::FieldsV1,
        other => match other.strip_prefix("m:") {
            Some(id) => {
                ValueType::Message(*by_id.get(id).ok_or_else(|| FieldError::UnknownMessage {
                    field: field.n.clone(),
                    message: id.to_owned(),
                })?)
            }
            None => {
                return Err(FieldError::UnknownType {
                    field: field.n.clone(),
                    type_name: other.to_owned(),
                });
            }
        },
    };
    let container = match field.c.as_deref() {
        None => Container::Single,
        Some("list") => Container::List,
        Some("map") => Container::Map,
        Some(other) => {
            return Err(FieldError::UnknownContainer {
                field: field.n.clone(),
                container: other.to_owned(),
            });
        }
    };
    let omit = match field.o.as_deref() {
        None => Omit {
            empty: false,
            zero: false,
        },
        Some("empty") => Omit {
            empty: true,
            zero: false,
        },
        Some("zero") => Omit {
            empty: false,
            zero: true,
        },
        Some("empty+zero") => Omit {
            empty: true,
            zero: true,
        },
        Some(other) => {
            return Err(FieldError::UnknownOmit {
                field: field.n.clone(),
                rule: other.to_owned(),
            });
        }
    };
    if field.i && !matches!(value, ValueType::Message(_)) {
        return Err(FieldError::InlineNotMessage {
            field: field.n.clone(),
            type_name: field.t.clone(),
        });
    }
    let mut key = String::new();
    if !field.i {
        super::json::string(&mut key, field.n.as_bytes());
        key.push(':');
    }
    Ok(Field {
        key: key.into(),
        name: field.n.as_str().into(),
        number: field.p,
        value,
        container,
        pointer: field.ptr,
        omit,
        inline: field.i,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_schema_has_the_common_kinds() {
        let schema = &*BUILT_IN;
        for (group, version, kind) in [
            ("", "v1", "Pod"),
            ("", "v1", "PodList"),
            ("", "v1", "ConfigMap"),
            ("apps", "v1", "Deployment"),
            ("coordination.k8s.io", "v1", "Lease"),
        ] {
            assert!(schema.kind(group, version, kind).is_some(), "{kind}");
        }
        assert_eq!(schema.kind("example.com", "v1", "Widget"), None);
        let pod = schema.message(schema.kind("", "v1", "Pod").unwrap());
        let metadata = &pod.fields[pod.field_index(1).unwrap()];
        assert_eq!(&*metadata.name, "metadata");
        assert_eq!(
            metadata.value,
            ValueType::Message(schema.message_id(OBJECT_META).unwrap())
        );
    }

    #[test]
    fn a_schema_with_a_dangling_reference_is_refused() {
        let text = r#"{"source": "t", "kinds": [], "messages": {
            "a.A": [{"n": "b", "p": 1, "t": "m:b.B"}]}}"#;
        let err = Schema::parse(text).unwrap_err().to_string();
        assert_eq!(err, r#"a.A: field "b" names the unknown message b.B"#);
    }
}
