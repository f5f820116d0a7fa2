//! Kubernetes protobuf (`application/vnd.kubernetes.protobuf`) both ways: request bodies
//! decoded to the JSON the server stores ([`decode`]), and answers encoded from that JSON
//! for clients that prefer protobuf ([`encode`]), as kube-apiserver answers client-go.
//!
//! # The wire format
//!
//! An object is the four magic bytes `k8s\0` followed by a `runtime.Unknown` message whose
//! `typeMeta` names the `apiVersion` and `kind`, whose `raw` holds the object's own message
//! (a list's is its `XList` message: `metadata` a `ListMeta`, then `items`), and whose
//! `contentEncoding` and `contentType` are empty. A watch answered in protobuf
//! (`application/vnd.kubernetes.protobuf;stream=watch`) is a sequence of frames, each a
//! 4-byte big-endian length and then a `meta.v1.WatchEvent` message, not enveloped, whose
//! `object` is a `runtime.RawExtension` whose `raw` is the enveloped object: the framing of
//! apimachinery's `LengthDelimitedFramer` and the apiserver's `watchEncoder`, which encodes
//! the event with the raw (envelope-less) serializer and the object inside with the enveloped
//! one. BOOKMARK events carry an object of the watched kind holding only
//! `metadata.resourceVersion` (and annotations); ERROR events a `Status`, whose envelope
//! says `v1` `Status` as on a real server.
//!
//! # The definitions, and why not the host's schema
//!
//! The message types are the published Kubernetes `.proto` definitions as shipped in the
//! `k8s-rs-pb` crate's sources, compiled by `build.rs` into a descriptor set that
//! rust-protobuf reads and writes by reflection, the envelope included; this module never
//! parses or writes the wire format by hand. Herald's own reader of protobuf
//! (`herald::informer::protobuf`) is driven instead by a schema generated from the Go
//! structs. The two are independent descriptions of the same types, built from different
//! sources by different code, so every suite scenario whose informers read built-in kinds
//! from this server over protobuf cross-checks the host's reader against the published
//! definitions: a field number, a type or a special form either side got wrong shows up as a
//! difference between the protobuf and the JSON run of the suite, where encoding with the
//! host's schema would have agreed with the host whatever it got wrong.
//!
//! # JSON and protobuf shapes
//!
//! The mapping walks a message's descriptor and is generic except for:
//!
//! * the types whose JSON form is not their message shape: `resource.Quantity` is its string
//!   (`"100m"`), `intstr.IntOrString` its number or string; `meta/v1` `Time` is RFC 3339 in
//!   seconds (`null` when zero), `MicroTime` in microseconds, `Duration` Go's duration string
//!   (`"1h0m0s"`); `runtime.RawExtension`, `meta/v1` `FieldsV1` and the apiextensions `JSON`
//!   hold JSON bytes and are that JSON (a nested protobuf `RawExtension` is decoded in turn);
//!   the apiextensions `JSONSchemaPropsOrArray`, `…OrBool` and `…OrStringArray` are one of
//!   their alternatives; `bytes` (Secret `data`) are base64; 64-bit integers JSON numbers;
//! * the Go structs embedded inline in JSON but carried as a field in protobuf (a `Volume`'s
//!   `volumeSource`, a `Probe`'s `handler`, …) and the few fields whose JSON name is not their
//!   protobuf name (`$ref`, `x-kubernetes-…`, an IngressClass reference's `apiGroup`), which
//!   the `.proto` files do not record: [`names`] lists them, and a test checks the list
//!   against the Go types as Herald's schema describes them.
//!
//! Protobuf cannot tell an absent field from a zero one where Go marshals non-pointer fields
//! unconditionally, so decoding omits empty strings, empty lists and empty maps (all
//! `omitempty` in the Kubernetes types) but keeps `false` and `0`, whose absence could mean a
//! different default (`automountServiceAccountToken: false`, `replicas: 0`). Nested structs
//! are kept even when empty (`resources: {}`), as Go's JSON encoder writes them.
//!
//! Encoding writes what the stored JSON holds and nothing else: a JSON `null` is an absent
//! field, and a key the definition lacks is left out, as a real server, which decodes every
//! write into the Go type, never stores one (an embedded object's `apiVersion` and `kind`,
//! which protobuf does not carry, are the common case; see issue 45's `volumeClaimTemplates`).
//! A value of the wrong type for its field (a string where a number belongs) cannot be
//! encoded and fails the answer: a real server would have refused to store it.

pub(crate) mod decode;
pub(crate) mod encode;
mod formats;
pub(crate) mod names;

use std::sync::OnceLock;

use ::protobuf::Message as _;
use ::protobuf::descriptor::FileDescriptorSet;
use ::protobuf::reflect::{FileDescriptor, MessageDescriptor};

pub(crate) use decode::decode;

/// The media type of Kubernetes protobuf bodies.
pub(crate) const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The `Content-Type` of a watch answered in protobuf.
pub(crate) const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// The prefix of every Kubernetes protobuf body.
pub(crate) const MAGIC: &[u8; 4] = b"k8s\0";

/// The message of `runtime.Unknown`, the envelope.
const UNKNOWN: &str = "apimachinery.pkg.runtime.Unknown";

/// The message of `meta/v1` `Status`, the kind of errors.
const STATUS: &str = "apimachinery.pkg.apis.meta.v1.Status";

/// Whether a `Content-Type` header value names Kubernetes protobuf (parameters ignored).
pub(crate) fn is_protobuf(content_type: &str) -> bool {
    content_type.split(';').next().unwrap_or("").trim() == MEDIA_TYPE
}

/// The Kubernetes definitions, compiled from the `.proto` files by `build.rs`.
pub(crate) fn files() -> &'static [FileDescriptor] {
    static FILES: OnceLock<Vec<FileDescriptor>> = OnceLock::new();
    FILES.get_or_init(|| {
        let set = FileDescriptorSet::parse_from_bytes(include_bytes!(concat!(
            env!("OUT_DIR"),
            "/k8s.fds"
        )))
        .expect("the descriptor set written by build.rs parses");
        FileDescriptor::new_dynamic_fds(set.file, &[])
            .expect("the descriptor set written by build.rs is complete")
    })
}

/// The message type named `full_name` (`apimachinery.pkg.runtime.Unknown`), which the
/// descriptor set written by `build.rs` holds.
pub(crate) fn message_named(full_name: &str) -> MessageDescriptor {
    let (package, name) = full_name.rsplit_once('.').unwrap_or(("", full_name));
    files()
        .iter()
        .filter(|f| f.package() == package)
        .find_map(|f| f.message_by_package_relative_name(name))
        .unwrap_or_else(|| panic!("build.rs compiles the definition of {full_name}"))
}

/// The protobuf package of `apiVersion`, for the API groups the server serves (and
/// `meta.k8s.io/v1` for options such as `DeleteOptions`).
fn package_for(api_version: &str) -> Option<&'static str> {
    Some(match api_version {
        "v1" => "api.core.v1",
        "apps/v1" => "api.apps.v1",
        "batch/v1" => "api.batch.v1",
        "coordination.k8s.io/v1" => "api.coordination.v1",
        "networking.k8s.io/v1" => "api.networking.v1",
        "events.k8s.io/v1" => "api.events.v1",
        "rbac.authorization.k8s.io/v1" => "api.rbac.v1",
        "admissionregistration.k8s.io/v1" => "api.admissionregistration.v1",
        "apiextensions.k8s.io/v1" => "apiextensions_apiserver.pkg.apis.apiextensions.v1",
        "meta.k8s.io/v1" => "apimachinery.pkg.apis.meta.v1",
        _ => return None,
    })
}

/// The `meta/v1` kinds every group version carries: a client sends them under the
/// version of the resource they act on (client-go encodes a Secret's
/// `DeleteOptions` as `v1`).
const OPTIONS: &[&str] = &[
    "DeleteOptions",
    "CreateOptions",
    "UpdateOptions",
    "PatchOptions",
];

/// The message type of `kind` at `apiVersion`, if the server has its protobuf definition.
/// `Status` and the options kinds are the `meta/v1` ones whatever the version names
/// (`v1` on a real server).
pub(crate) fn message_for(api_version: &str, kind: &str) -> Option<MessageDescriptor> {
    if kind == "Status" {
        return Some(message_named(STATUS));
    }
    let package = if OPTIONS.contains(&kind) {
        package_for("meta.k8s.io/v1")?
    } else {
        package_for(api_version)?
    };
    files()
        .iter()
        .filter(|f| f.package() == package)
        .find_map(|f| f.message_by_package_relative_name(kind))
}

/// The bytes field of the messages holding JSON (`RawExtension`, `FieldsV1`, the
/// apiextensions `JSON`): field 1, named `raw` in two and `Raw` in `FieldsV1`.
pub(crate) fn raw_field(descriptor: &MessageDescriptor) -> ::protobuf::reflect::FieldDescriptor {
    descriptor
        .field_by_number(1)
        .unwrap_or_else(|| panic!("{} has a field 1", descriptor.full_name()))
}

/// Whether objects of `kind` (and their `<kind>List`) at `apiVersion` can be answered in
/// protobuf: a built-in kind this server has the definition of.
pub(crate) fn has_kind(api_version: &str, kind: &str) -> bool {
    message_for(api_version, kind).is_some()
        && message_for(api_version, &format!("{kind}List")).is_some()
}
