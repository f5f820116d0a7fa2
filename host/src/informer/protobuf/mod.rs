//! Reading built-in kinds over protobuf, as client-go does, and handing on
//! the JSON the API server would have sent for them.
//!
//! The server encodes protobuf about eight times faster than JSON (an
//! `rv=0` list of 11,000 Pods: 1.0 s against 7.9–9.0 s on kube-apiserver
//! 1.36), so a reader of JSON starts later than client-go however fast it
//! parses. Plugins, the cache and replay all speak JSON, so this module
//! transcodes at the edge: each protobuf message is written out as the JSON
//! Go's `encoding/json` writes for the same Go value (fields in declaration
//! order, `omitempty`, the special types' own formats), driven by
//! [`schema`], which is generated from the Go types.
//!
//! A field number the schema does not know (a newer server) is an error,
//! never dropped: the reflector then reads that kind as JSON.

mod json;
pub mod schema;
mod wire;

use schema::{Container, Field, MessageIndex, Schema, ValueType};
use wire::{Fields, WireValue};

/// The embedded objects whose `kind` and `apiVersion` the server writes in
/// its JSON although protobuf does not carry an embedded object's TypeMeta
/// (no field number): (message, field, apiVersion, kind). A StatefulSet's
/// `volumeClaimTemplates` come out of kube-apiserver as
/// `{"kind":"PersistentVolumeClaim","apiVersion":"v1",…}` however they were
/// written (its defaulting sets them), so a reader of its protobuf writes
/// them too.
const FILLED_TYPE_META: [(&str, &str, &str, &str); 3] = [
    (
        "k8s.io/api/apps/v1.StatefulSetSpec",
        "volumeClaimTemplates",
        "v1",
        "PersistentVolumeClaim",
    ),
    (
        "k8s.io/api/apps/v1beta1.StatefulSetSpec",
        "volumeClaimTemplates",
        "v1",
        "PersistentVolumeClaim",
    ),
    (
        "k8s.io/api/apps/v1beta2.StatefulSetSpec",
        "volumeClaimTemplates",
        "v1",
        "PersistentVolumeClaim",
    ),
];

/// Where `ours` (a transcoding) first differs from `expected` (the JSON
/// it should be), with up to 60 bytes of each around that point; `None`
/// when they are the same. For the tools and tests that compare the two.
pub fn difference(ours: &str, expected: &str) -> Option<String> {
    if ours == expected {
        return None;
    }
    let at = ours
        .bytes()
        .zip(expected.bytes())
        .position(|(a, b)| a != b)
        .unwrap_or(ours.len().min(expected.len()));
    let window = |text: &str| {
        let start = text.floor_char_boundary(at.saturating_sub(60));
        let end = text.ceil_char_boundary((at + 60).min(text.len()));
        text[start..end].to_owned()
    };
    Some(format!(
        "differs at byte {at}\n    herald:   …{}…\n    expected: …{}…",
        window(ours),
        window(expected)
    ))
}

/// Why protobuf could not be transcoded.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TranscodeError {
    /// Not valid protobuf.
    #[error("malformed protobuf: {0}")]
    Malformed(String),
    /// A field this Herald's schema does not have (a newer server).
    #[error("{message} has field number {number}, which this Herald's schema ({source_of}) lacks")]
    UnknownField {
        /// The message's Go id.
        message: String,
        /// The field number.
        number: u32,
        /// What the schema was generated from.
        source_of: String,
    },
    /// A field on the wire in a form its type does not take.
    #[error("{message}.{field} arrived as the wrong wire type")]
    WireType {
        /// The message's Go id.
        message: String,
        /// The field's JSON name.
        field: String,
    },
    /// A kind the schema does not have.
    #[error("the kind {kind} of {api_version} is not in this Herald's schema")]
    UnknownKind {
        /// The envelope's apiVersion.
        api_version: String,
        /// The envelope's kind.
        kind: String,
    },
    /// Embedded JSON (a `RawExtension`, `FieldsV1`) that is not JSON.
    #[error("{0} holds bytes that are not JSON")]
    NotJson(String),
}

/// The media type that asks for protobuf and takes JSON where the server
/// has none (as client-go asks).
pub const ACCEPT_PROTOBUF: &str = "application/vnd.kubernetes.protobuf, application/json";

/// Whether an answer's `Content-Type` is Kubernetes protobuf.
pub fn is_protobuf(content_type: &str) -> bool {
    content_type
        .trim_start()
        .starts_with("application/vnd.kubernetes.protobuf")
}

/// The magic number before every enveloped object.
const MAGIC: &[u8] = b"k8s\0";

/// Messages nest at most this deep (a Pod is about twelve).
const MAX_DEPTH: u32 = 64;

/// An object as the server wraps it: `runtime.Unknown` after the magic.
#[derive(Debug, PartialEq)]
pub struct Envelope<'a> {
    /// `v1`, `apps/v1`.
    pub api_version: &'a str,
    /// `Pod`, `PodList`.
    pub kind: &'a str,
    /// The object's own message.
    pub raw: &'a [u8],
}

impl<'a> Envelope<'a> {
    /// Unwraps `bytes` (magic, then `runtime.Unknown`).
    pub fn read(bytes: &'a [u8]) -> Result<Envelope<'a>, TranscodeError> {
        let body = bytes
            .strip_prefix(MAGIC)
            .ok_or_else(|| TranscodeError::Malformed("no k8s protobuf magic".into()))?;
        let mut envelope = Envelope {
            api_version: "",
            kind: "",
            raw: &[],
        };
        let mut fields = Fields::new(body);
        while let Some((number, value)) = fields.next_field()? {
            match (number, value) {
                (1, WireValue::Bytes(type_meta)) => {
                    let mut type_fields = Fields::new(type_meta);
                    while let Some((number, value)) = type_fields.next_field()? {
                        match (number, value) {
                            (1, WireValue::Bytes(text)) => envelope.api_version = utf8(text)?,
                            (2, WireValue::Bytes(text)) => envelope.kind = utf8(text)?,
                            _ => {}
                        }
                    }
                }
                (2, WireValue::Bytes(raw)) => envelope.raw = raw,
                (3 | 4, WireValue::Bytes(encoding)) if !encoding.is_empty() => {
                    return Err(TranscodeError::Malformed(format!(
                        "an object in a {:?} encoding",
                        String::from_utf8_lossy(encoding)
                    )));
                }
                _ => {}
            }
        }
        Ok(envelope)
    }
}

fn utf8(bytes: &[u8]) -> Result<&str, TranscodeError> {
    std::str::from_utf8(bytes)
        .map_err(|_| TranscodeError::Malformed("a name that is not UTF-8".into()))
}

/// Writes protobuf objects as the API server's JSON.
#[derive(Debug, Clone, Copy)]
pub struct Transcoder {
    schema: &'static Schema,
    type_meta: MessageIndex,
    /// `metav1.ObjectMeta` when its `managedFields` are left out.
    skip_managed_fields_of: Option<MessageIndex>,
    /// The messages of [`FILLED_TYPE_META`], in its order (`None`: not in
    /// the schema).
    filled: [Option<MessageIndex>; FILLED_TYPE_META.len()],
}

impl Transcoder {
    /// A transcoder over the built-in schema; with `skip_managed_fields`,
    /// objects come out without `metadata.managedFields` (never decoded).
    pub fn new(skip_managed_fields: bool) -> Self {
        Self::with_schema(&schema::BUILT_IN, skip_managed_fields)
    }

    /// A transcoder over `schema`.
    pub fn with_schema(schema: &'static Schema, skip_managed_fields: bool) -> Self {
        let id = |id: &str| schema.message_id(id).expect("checked when parsed");
        Transcoder {
            schema,
            type_meta: id(schema::TYPE_META),
            skip_managed_fields_of: skip_managed_fields.then(|| id(schema::OBJECT_META)),
            filled: FILLED_TYPE_META.map(|(message, ..)| schema.message_id(message)),
        }
    }

    /// The (apiVersion, kind) the server writes into each item of message
    /// `index`'s list `field`, if it is one of [`FILLED_TYPE_META`].
    fn filled_type_meta(&self, index: MessageIndex, field: &str) -> Option<(&str, &str)> {
        let at = self.filled.iter().position(|m| *m == Some(index))?;
        let (_, filled_field, api_version, kind) = FILLED_TYPE_META[at];
        (filled_field == field).then_some((api_version, kind))
    }

    /// Whether the schema has `kind` of `api_version` (and so the server can
    /// be asked for it in protobuf).
    pub fn knows(&self, api_version: &str, kind: &str) -> bool {
        self.kind(api_version, kind).is_some()
    }

    fn kind(&self, api_version: &str, kind: &str) -> Option<MessageIndex> {
        if kind == "Status" {
            return self.schema.message_id(schema::STATUS);
        }
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        self.schema.kind(group, version, kind)
    }

    /// Writes the enveloped object `bytes` (a single object or a list) as
    /// JSON, with its `kind` and `apiVersion`.
    pub fn object(&self, bytes: &[u8], out: &mut String) -> Result<(), TranscodeError> {
        let envelope = Envelope::read(bytes)?;
        let index = self
            .kind(envelope.api_version, envelope.kind)
            .ok_or_else(|| TranscodeError::UnknownKind {
                api_version: envelope.api_version.into(),
                kind: envelope.kind.into(),
            })?;
        let type_meta = (envelope.api_version, envelope.kind);
        self.message(index, envelope.raw, Some(type_meta), out, 0)
    }

    /// Writes one frame of a protobuf watch (`metav1.WatchEvent`) as the
    /// line a JSON watch would have sent: `{"type":…,"object":…}`.
    pub fn watch_event(&self, frame: &[u8], out: &mut String) -> Result<(), TranscodeError> {
        let mut event_type: &[u8] = b"";
        let mut object: &[u8] = b"";
        let mut fields = Fields::new(frame);
        while let Some((number, value)) = fields.next_field()? {
            match (number, value) {
                (1, WireValue::Bytes(text)) => event_type = text,
                (2, WireValue::Bytes(extension)) => {
                    let mut raw = Fields::new(extension);
                    while let Some((number, value)) = raw.next_field()? {
                        if let (1, WireValue::Bytes(bytes)) = (number, value) {
                            object = bytes;
                        }
                    }
                }
                _ => {}
            }
        }
        out.push_str("{\"type\":");
        json::string(out, event_type);
        out.push_str(",\"object\":");
        self.object(object, out)?;
        out.push('}');
        Ok(())
    }

    fn message(
        &self,
        index: MessageIndex,
        bytes: &[u8],
        type_meta: Option<(&str, &str)>,
        out: &mut String,
        depth: u32,
    ) -> Result<(), TranscodeError> {
        out.push('{');
        let mut first = true;
        self.fields(index, bytes, type_meta, out, &mut first, depth)?;
        out.push('}');
        Ok(())
    }

    /// Writes the fields of message `index` (encoded in `bytes`) into the
    /// object being written, in declaration order.
    fn fields(
        &self,
        index: MessageIndex,
        bytes: &[u8],
        type_meta: Option<(&str, &str)>,
        out: &mut String,
        first: &mut bool,
        depth: u32,
    ) -> Result<(), TranscodeError> {
        if depth > MAX_DEPTH {
            return Err(TranscodeError::Malformed(format!(
                "messages nested deeper than {MAX_DEPTH}"
            )));
        }
        let message = self.schema.message(index);
        let mut present: Vec<(usize, WireValue<'_>)> = Vec::new();
        let mut wire = Fields::new(bytes);
        while let Some((number, value)) = wire.next_field()? {
            let slot = message
                .field_index(number)
                .ok_or_else(|| TranscodeError::UnknownField {
                    message: message.id.clone(),
                    number,
                    source_of: self.schema.source.clone(),
                })?;
            present.push((slot, value));
        }
        // Protobuf writes by field number, JSON by declaration order.
        present.sort_by_key(|(slot, _)| *slot);
        let mut cursor = 0;
        for (slot, field) in message.fields.iter().enumerate() {
            let start = cursor;
            while cursor < present.len() && present[cursor].0 == slot {
                cursor += 1;
            }
            let values = &present[start..cursor];
            if self.skip_managed_fields_of == Some(index) && &*field.name == "managedFields" {
                continue;
            }
            let context = Context {
                message: &message.id,
                field,
            };
            if field.inline {
                let ValueType::Message(inner) = field.value else {
                    unreachable!("checked when the schema was parsed")
                };
                if inner == self.type_meta {
                    if let Some((api_version, kind)) = type_meta {
                        separate(out, first);
                        out.push_str("\"kind\":");
                        json::string(out, kind.as_bytes());
                        out.push_str(",\"apiVersion\":");
                        json::string(out, api_version.as_bytes());
                    }
                    continue;
                }
                let bytes = match values.last() {
                    Some((_, value)) => context.bytes(*value)?,
                    None => &[],
                };
                self.fields(inner, bytes, None, out, first, depth + 1)?;
                continue;
            }
            match field.container {
                Container::Single => {
                    self.single(context, values.last().map(|v| v.1), out, first, depth)?
                }
                // A list answer's items are never nil: the server makes
                // them an empty slice, so its JSON says `[]` where
                // protobuf carries no item.
                Container::List
                    if values.is_empty()
                        && &*field.name == "items"
                        && type_meta.is_some_and(|(_, kind)| kind.ends_with("List")) =>
                {
                    key(out, first, field);
                    out.push_str("[]");
                }
                Container::List | Container::Map if values.is_empty() => {
                    if !(field.omit.empty || field.omit.zero) {
                        key(out, first, field);
                        out.push_str("null");
                    }
                }
                Container::List => {
                    key(out, first, field);
                    out.push('[');
                    let mut first_item = true;
                    // Only lists of messages can be filled: other lists
                    // never look.
                    let filled = match field.value {
                        ValueType::Message(inner) => self
                            .filled_type_meta(index, &field.name)
                            .map(|type_meta| (inner, type_meta)),
                        _ => None,
                    };
                    match filled {
                        Some((inner, type_meta)) => {
                            for (_, value) in values {
                                separate(out, &mut first_item);
                                let bytes = context.bytes(*value)?;
                                self.message(inner, bytes, Some(type_meta), out, depth + 1)?;
                            }
                        }
                        _ => {
                            for (_, value) in values {
                                self.items(context, *value, out, &mut first_item, depth)?;
                            }
                        }
                    }
                    out.push(']');
                }
                Container::Map => {
                    key(out, first, field);
                    self.map(context, values, out, depth)?;
                }
            }
        }
        Ok(())
    }

    /// Writes a field holding one value (`None`: absent from the wire).
    fn single(
        &self,
        context: Context<'_>,
        value: Option<WireValue<'_>>,
        out: &mut String,
        first: &mut bool,
        depth: u32,
    ) -> Result<(), TranscodeError> {
        let field = context.field;
        let omit = field.omit;
        let Some(value) = value else {
            if field.pointer {
                if !(omit.empty || omit.zero) {
                    key(out, first, field);
                    out.push_str("null");
                }
                return Ok(());
            }
            // Go's generated Marshal writes every field that is not a
            // pointer or a slice, zero or not: one absent from the wire is
            // one the server's version of the type does not have (a newer
            // Herald on an older server), and its JSON does not have it
            // either. The types whose zero JSON is `null` are the
            // exceptions: a nil `[]byte` is never on the wire, and writers
            // that are not Go (the embedded API server) leave out a `null`
            // time or raw extension, which Go reads back as `null`.
            let null_when_zero = matches!(
                field.value,
                ValueType::Bytes
                    | ValueType::Time
                    | ValueType::MicroTime
                    | ValueType::RawExtension
                    | ValueType::FieldsV1
            );
            // (`omitempty` leaves out an empty `[]byte` but never a struct.)
            let omitted = omit.zero || omit.empty && field.value == ValueType::Bytes;
            if !null_when_zero || omitted {
                return Ok(());
            }
            key(out, first, field);
            return self.zero(field.value, out, depth);
        };
        if !field.pointer && (omit.empty || omit.zero) && context.is_empty(value)? {
            return Ok(());
        }
        key(out, first, field);
        self.value(context, value, out, depth)
    }

    /// Writes the zero value of `value_type`, as Go writes it.
    fn zero(
        &self,
        value_type: ValueType,
        out: &mut String,
        depth: u32,
    ) -> Result<(), TranscodeError> {
        match value_type {
            ValueType::String => out.push_str("\"\""),
            ValueType::Bool => out.push_str("false"),
            ValueType::Int32
            | ValueType::Int64
            | ValueType::Uint32
            | ValueType::Uint64
            | ValueType::Float32
            | ValueType::Float64
            | ValueType::IntOrString => out.push('0'),
            ValueType::Bytes
            | ValueType::Time
            | ValueType::MicroTime
            | ValueType::RawExtension
            | ValueType::FieldsV1 => out.push_str("null"),
            ValueType::Duration => out.push_str("\"0s\""),
            ValueType::Quantity => out.push_str("\"0\""),
            ValueType::Message(index) => self.message(index, &[], None, out, depth + 1)?,
        }
        Ok(())
    }

    /// Writes the items of a repeated field one wire value carries: one,
    /// or a packed run of numbers.
    fn items(
        &self,
        context: Context<'_>,
        value: WireValue<'_>,
        out: &mut String,
        first: &mut bool,
        depth: u32,
    ) -> Result<(), TranscodeError> {
        let packed_width = match (context.field.value, value) {
            (
                ValueType::Bool
                | ValueType::Int32
                | ValueType::Int64
                | ValueType::Uint32
                | ValueType::Uint64,
                WireValue::Bytes(_),
            ) => Some(0),
            (ValueType::Float64, WireValue::Bytes(_)) => Some(8),
            (ValueType::Float32, WireValue::Bytes(_)) => Some(4),
            _ => None,
        };
        let (Some(width), WireValue::Bytes(packed)) = (packed_width, value) else {
            separate(out, first);
            return self.value(context, value, out, depth);
        };
        if width > 0 {
            if packed.len() % width != 0 {
                return Err(context.wire_type());
            }
            for chunk in packed.chunks(width) {
                separate(out, first);
                let item = if width == 8 {
                    WireValue::Fixed64(u64::from_le_bytes(chunk.try_into().expect("8")))
                } else {
                    WireValue::Fixed32(u32::from_le_bytes(chunk.try_into().expect("4")))
                };
                self.value(context, item, out, depth)?;
            }
            return Ok(());
        }
        let mut numbers = Fields::new(packed);
        while !numbers.is_empty() {
            separate(out, first);
            let item = WireValue::Varint(numbers.varint()?);
            self.value(context, item, out, depth)?;
        }
        Ok(())
    }

    /// Writes a map's entries, sorted by key as Go sorts them.
    fn map(
        &self,
        context: Context<'_>,
        entries: &[(usize, WireValue<'_>)],
        out: &mut String,
        depth: u32,
    ) -> Result<(), TranscodeError> {
        let mut pairs: Vec<(&[u8], Option<WireValue<'_>>)> = Vec::with_capacity(entries.len());
        for (_, entry) in entries {
            let mut fields = Fields::new(context.bytes(*entry)?);
            let (mut map_key, mut map_value): (&[u8], _) = (b"", None);
            while let Some((number, value)) = fields.next_field()? {
                match (number, value) {
                    (1, WireValue::Bytes(text)) => map_key = text,
                    (2, value) => map_value = Some(value),
                    _ => return Err(context.wire_type()),
                }
            }
            pairs.push((map_key, map_value));
        }
        pairs.sort_by(|a, b| a.0.cmp(b.0));
        // A later entry with the same key wins, as when Go decodes it.
        pairs.dedup_by(|later, earlier| {
            if later.0 == earlier.0 {
                earlier.1 = later.1;
                true
            } else {
                false
            }
        });
        out.push('{');
        let mut first = true;
        for (map_key, map_value) in pairs {
            separate(out, &mut first);
            json::string(out, map_key);
            out.push(':');
            match map_value {
                Some(value) => self.value(context, value, out, depth)?,
                // Go decodes a map's bytes value from `[]byte{}`, never
                // nil: an entry without one is `""`, not `null`.
                None if context.field.value == ValueType::Bytes => out.push_str("\"\""),
                None => self.zero(context.field.value, out, depth)?,
            }
        }
        out.push('}');
        Ok(())
    }

    /// Writes one value of `context`'s field.
    fn value(
        &self,
        context: Context<'_>,
        value: WireValue<'_>,
        out: &mut String,
        depth: u32,
    ) -> Result<(), TranscodeError> {
        use std::fmt::Write;
        match (context.field.value, value) {
            (ValueType::String, WireValue::Bytes(text)) => json::string(out, text),
            (ValueType::Bytes, WireValue::Bytes(bytes)) => json::base64(out, bytes),
            (ValueType::Bool, WireValue::Varint(n)) => {
                out.push_str(if n != 0 { "true" } else { "false" })
            }
            (ValueType::Int32, WireValue::Varint(n)) => {
                let _ = write!(out, "{}", n as i64 as i32);
            }
            (ValueType::Int64, WireValue::Varint(n)) => {
                let _ = write!(out, "{}", n as i64);
            }
            (ValueType::Uint32, WireValue::Varint(n)) => {
                let _ = write!(out, "{}", n as u32);
            }
            (ValueType::Uint64, WireValue::Varint(n)) => {
                let _ = write!(out, "{n}");
            }
            (ValueType::Float64, WireValue::Fixed64(bits)) => {
                json::float(out, f64::from_bits(bits))
            }
            (ValueType::Float32, WireValue::Fixed32(bits)) => {
                json::float32(out, f32::from_bits(bits))
            }
            (ValueType::Message(index), WireValue::Bytes(bytes)) => {
                self.message(index, bytes, None, out, depth + 1)?
            }
            (special, WireValue::Bytes(bytes)) => special_value(context, special, bytes, out)?,
            _ => return Err(context.wire_type()),
        }
        Ok(())
    }
}

/// Writes a value of one of the types with their own JSON form.
fn special_value(
    context: Context<'_>,
    special: ValueType,
    bytes: &[u8],
    out: &mut String,
) -> Result<(), TranscodeError> {
    let parts = SpecialParts::read(bytes)?;
    match special {
        ValueType::Time | ValueType::MicroTime => match parts.time() {
            // Go decodes `metav1.Time` to whole seconds.
            Some((seconds, nanos)) => {
                json::time(out, seconds, nanos, special == ValueType::MicroTime)
            }
            None => out.push_str("null"),
        },
        ValueType::Duration => json::duration(out, parts.number(1) as i64),
        ValueType::Quantity => match parts.text(1) {
            Some(text) if !text.is_empty() => json::string(out, text),
            _ => out.push_str("\"0\""),
        },
        ValueType::IntOrString => {
            if parts.number(1) == 1 {
                json::string(out, parts.text(3).unwrap_or_default());
            } else {
                use std::fmt::Write;
                let _ = write!(out, "{}", parts.number(2) as i64 as i32);
            }
        }
        ValueType::RawExtension | ValueType::FieldsV1 => match parts.text(1) {
            None => out.push_str("null"),
            Some(raw) => {
                if !json::embedded(out, raw) {
                    return Err(TranscodeError::NotJson(format!(
                        "{}.{}",
                        context.message, context.field.name
                    )));
                }
            }
        },
        _ => return Err(context.wire_type()),
    }
    Ok(())
}

/// The first few fields of a special type's message, read once.
#[derive(Default)]
struct SpecialParts<'a> {
    numbers: [u64; 4],
    texts: [Option<&'a [u8]>; 4],
    empty: bool,
}

impl<'a> SpecialParts<'a> {
    fn read(bytes: &'a [u8]) -> Result<Self, TranscodeError> {
        let mut parts = SpecialParts {
            empty: bytes.is_empty(),
            ..SpecialParts::default()
        };
        let mut fields = Fields::new(bytes);
        while let Some((number, value)) = fields.next_field()? {
            let slot = number as usize;
            if slot >= 4 {
                continue;
            }
            match value {
                WireValue::Varint(n) => parts.numbers[slot] = n,
                WireValue::Bytes(text) => parts.texts[slot] = Some(text),
                _ => {}
            }
        }
        Ok(parts)
    }

    fn number(&self, field: usize) -> u64 {
        self.numbers[field]
    }

    fn text(&self, field: usize) -> Option<&'a [u8]> {
        self.texts[field]
    }

    /// A `Timestamp`'s seconds and nanos, `None` for Go's zero time.
    fn time(&self) -> Option<(i64, i32)> {
        let seconds = self.numbers[1] as i64;
        (!self.empty && seconds != json::GO_ZERO_TIME_UNIX)
            .then_some((seconds, self.numbers[2] as i64 as i32))
    }
}

/// The field being written, for its type and for errors.
#[derive(Clone, Copy)]
struct Context<'a> {
    message: &'a str,
    field: &'a Field,
}

impl<'a> Context<'a> {
    fn wire_type(&self) -> TranscodeError {
        TranscodeError::WireType {
            message: self.message.to_owned(),
            field: self.field.name.to_string(),
        }
    }

    fn bytes<'b>(&self, value: WireValue<'b>) -> Result<&'b [u8], TranscodeError> {
        match value {
            WireValue::Bytes(bytes) => Ok(bytes),
            _ => Err(self.wire_type()),
        }
    }

    /// Whether `omitempty` (or `omitzero`) leaves this non-pointer value out.
    fn is_empty(&self, value: WireValue<'_>) -> Result<bool, TranscodeError> {
        let omit = self.field.omit;
        Ok(match (self.field.value, value) {
            (ValueType::String | ValueType::Bytes, WireValue::Bytes(bytes)) => bytes.is_empty(),
            (_, WireValue::Varint(n)) => n == 0,
            (_, WireValue::Fixed64(n)) => f64::from_bits(n) == 0.0,
            (_, WireValue::Fixed32(n)) => f32::from_bits(n) == 0.0,
            // Structs: `omitempty` keeps them, `omitzero` drops the zero one.
            (ValueType::Time | ValueType::MicroTime, WireValue::Bytes(bytes)) => {
                omit.zero && SpecialParts::read(bytes)?.time().is_none()
            }
            (_, WireValue::Bytes(bytes)) => omit.zero && bytes.is_empty(),
        })
    }
}

fn separate(out: &mut String, first: &mut bool) {
    if *first {
        *first = false;
    } else {
        out.push(',');
    }
}

fn key(out: &mut String, first: &mut bool, field: &Field) {
    separate(out, first);
    out.push_str(&field.key);
}

#[cfg(test)]
mod tests;
