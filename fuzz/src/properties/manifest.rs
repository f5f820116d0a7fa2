//! Plugin manifests: [`Manifest::from_guest`] on any record a guest's
//! `manifest` export could return, built with `arbitrary`.
//!
//! Strings are drawn from the alphabet their field needs, from values real
//! plugins use, or from anything, so that both accepted and refused
//! manifests are frequent.
//!
//! - Validation never panics, and a refusal is one line (it is logged, and
//!   the plugin that wrote the manifest is not trusted).
//! - An accepted manifest keeps what the guest said (name, version,
//!   subscriptions in order, limits, capabilities) and holds the promised
//!   invariants, checked here independently: an RFC 1123 label for a name; a
//!   version of 1 to 64 bytes without spaces or control characters; 1 to
//!   [`MAX_SUBSCRIPTIONS`] subscriptions, each with a version and a kind, a
//!   valid namespace if any, selectors that parse if any, a resync period in
//!   range if any; no two subscriptions watching the same objects (same
//!   kind, namespace and set of selector requirements); no limit of zero.

use arbitrary::{Arbitrary, Unstructured};
use herald::plugin::{Delivery, MAX_RESYNC, MAX_SUBSCRIPTIONS, MIN_RESYNC, Manifest, Subscription};
use herald::wit::abi;
use herald_grammar::selector::{FieldSelector, LabelSelector};
use std::collections::BTreeSet;
use std::time::Duration;

/// Builds a guest manifest from `data` and validates it.
pub fn check(data: &[u8]) {
    let Ok(guest) = GuestManifest::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    let raw = guest.into_abi();
    match Manifest::from_guest(raw.clone(), None) {
        Ok(manifest) => check_accepted(&raw, &manifest),
        Err(err) => assert!(
            super::is_one_line(&err.to_string()),
            "{raw:?}: the error is not one line: {err}"
        ),
    }
}

/// A guest's manifest record, field by field as in `wit/0.2.0/herald.wit`.
#[derive(Debug, Arbitrary)]
struct GuestManifest {
    #[arbitrary(with = name)]
    name: String,
    #[arbitrary(with = version)]
    version: String,
    subscriptions: Vec<GuestSubscription>,
    #[arbitrary(with = small_or_any_u32)]
    call_deadline_ms: Option<u32>,
    memory_bytes: Option<u64>,
    capabilities: Vec<String>,
}

/// A guest's subscription record.
#[derive(Debug, Arbitrary)]
struct GuestSubscription {
    #[arbitrary(with = kind)]
    kind: (String, String, String),
    #[arbitrary(with = optional(name))]
    namespace: Option<String>,
    #[arbitrary(with = optional(label_selector))]
    label_selector: Option<String>,
    #[arbitrary(with = optional(field_selector))]
    field_selector: Option<String>,
    #[arbitrary(with = resync_period_ms)]
    resync_period_ms: Option<u64>,
    coalesced: bool,
}

impl GuestManifest {
    fn into_abi(self) -> abi::Manifest {
        abi::Manifest {
            name: self.name,
            version: self.version,
            subscriptions: self
                .subscriptions
                .into_iter()
                .map(GuestSubscription::into_abi)
                .collect(),
            limits: abi::Limits {
                call_deadline_ms: self.call_deadline_ms,
                memory_bytes: self.memory_bytes,
            },
            capabilities: self.capabilities,
            // Write rules are checked by their own unit tests
            // (host/src/capability/grant.rs); the corpus keeps its meaning.
            writes: Vec::new(),
            // Metric definitions are checked by their own unit tests
            // (host/src/capability/metrics/definition.rs).
            metrics: Vec::new(),
            // Index definitions are checked by their own unit tests
            // (host/src/plugin/manifest.rs, host/src/store/index.rs).
            indexes: Vec::new(),
        }
    }
}

impl GuestSubscription {
    fn into_abi(self) -> abi::Subscription {
        let (group, version, kind) = self.kind;
        abi::Subscription {
            kind: abi::GroupVersionKind {
                group,
                version,
                kind,
            },
            namespace: self.namespace,
            label_selector: self.label_selector,
            field_selector: self.field_selector,
            resync_period_ms: self.resync_period_ms,
            delivery: if self.coalesced {
                abi::DeliveryMode::Coalesced
            } else {
                abi::DeliveryMode::EveryEvent
            },
        }
    }
}

type Draw<T> = arbitrary::Result<T>;

/// One of `known`, a string over `alphabet`, or any string.
fn one_of(u: &mut Unstructured<'_>, known: &[&str], alphabet: &str) -> Draw<String> {
    Ok(match u.int_in_range(0..=2u8)? {
        0 => (*u.choose(known)?).to_owned(),
        1 => {
            let letters: Vec<char> = alphabet.chars().collect();
            let len = u.int_in_range(0..=70usize)?;
            (0..len)
                .map(|_| u.choose(&letters).copied())
                .collect::<Draw<String>>()?
        }
        _ => u.arbitrary()?,
    })
}

const DNS_LABEL: &str = "abcdefghijklmnopqrstuvwxyz0123456789-";

fn name(u: &mut Unstructured<'_>) -> Draw<String> {
    let known = [
        "pod-lifecycle",
        "image-policy",
        "shop",
        "kube-system",
        "a",
        "-a",
        "a-",
        "",
    ];
    one_of(u, &known, DNS_LABEL)
}

fn version(u: &mut Unstructured<'_>) -> Draw<String> {
    one_of(
        u,
        &["0.1.0", "1.2.3-rc.1+build", "v2", "", "1 0"],
        "0123456789.-+abv",
    )
}

fn kind(u: &mut Unstructured<'_>) -> Draw<(String, String, String)> {
    let known = [
        ("", "v1", "Pod"),
        ("", "v1", "ConfigMap"),
        ("apps", "v1", "Deployment"),
        ("apps", "v1", "ReplicaSet"),
        ("example.com", "v1alpha1", "Widget"),
        ("", "", "Pod"),
        ("", "v1", ""),
    ];
    if u.arbitrary()? {
        let (group, version, kind) = *u.choose(&known)?;
        return Ok((group.into(), version.into(), kind.into()));
    }
    Ok((u.arbitrary()?, u.arbitrary()?, u.arbitrary()?))
}

fn label_selector(u: &mut Unstructured<'_>) -> Draw<String> {
    let known = [
        "app=web",
        "app==web",
        " app = web ",
        "app=web,tier!=cache",
        "env in (prod,staging)",
        "!canary",
        "app in (",
        "",
        " ",
    ];
    one_of(u, &known, "abz09-_./=!<>(), ")
}

fn field_selector(u: &mut Unstructured<'_>) -> Draw<String> {
    let known = [
        "metadata.name=web",
        "metadata.name==web",
        "spec.nodeName=node-1",
        "status.phase!=Running",
        "metadata.name=a\\,b",
        "metadata.name",
        "",
    ];
    one_of(u, &known, "abmn.=!,\\ ")
}

fn resync_period_ms(u: &mut Unstructured<'_>) -> Draw<Option<u64>> {
    let edges = [0, 999, 1_000, 30_000, 86_400_000, 86_400_001, u64::MAX];
    Ok(match u.int_in_range(0..=2u8)? {
        0 => None,
        1 => Some(*u.choose(&edges)?),
        _ => Some(u.arbitrary()?),
    })
}

fn small_or_any_u32(u: &mut Unstructured<'_>) -> Draw<Option<u32>> {
    Ok(match u.int_in_range(0..=2u8)? {
        0 => None,
        1 => Some(u.int_in_range(0..=2u32)?),
        _ => Some(u.arbitrary()?),
    })
}

fn optional(
    draw: fn(&mut Unstructured<'_>) -> Draw<String>,
) -> impl Fn(&mut Unstructured<'_>) -> Draw<Option<String>> {
    move |u| Ok(if u.arbitrary()? { Some(draw(u)?) } else { None })
}

fn check_accepted(raw: &abi::Manifest, manifest: &Manifest) {
    let context = || format!("accepted {raw:?} as {manifest:?}");
    assert!(is_dns_label(&manifest.name), "{}: bad name", context());
    let version = &manifest.version;
    assert!(
        (1..=64).contains(&version.len())
            && !version.chars().any(|c| c.is_control() || c.is_whitespace()),
        "{}: bad version",
        context()
    );
    assert!(
        (1..=MAX_SUBSCRIPTIONS).contains(&manifest.subscriptions.len()),
        "{}: wrong number of subscriptions",
        context()
    );
    assert!(
        manifest.name == raw.name
            && manifest.version == raw.version
            && manifest.capabilities == raw.capabilities
            && manifest.subscriptions.len() == raw.subscriptions.len(),
        "{}: not what the guest said",
        context()
    );
    let limits = &manifest.limits;
    assert!(
        limits.call_deadline
            == raw
                .limits
                .call_deadline_ms
                .map(|ms| Duration::from_millis(ms.into()))
            && limits.memory_bytes == raw.limits.memory_bytes
            && limits.call_deadline != Some(Duration::ZERO)
            && limits.memory_bytes != Some(0),
        "{}: bad limits",
        context()
    );
    for (index, (sub, raw_sub)) in manifest
        .subscriptions
        .iter()
        .zip(&raw.subscriptions)
        .enumerate()
    {
        check_subscription(sub, raw_sub)
            .unwrap_or_else(|problem| panic!("{}: subscription #{index}: {problem}", context()));
        if let Some(earlier) = manifest.subscriptions[..index]
            .iter()
            .position(|earlier| same_objects(earlier, sub))
        {
            panic!(
                "{}: subscriptions #{earlier} and #{index} watch the same objects",
                context()
            );
        }
    }
}

fn check_subscription(sub: &Subscription, raw: &abi::Subscription) -> Result<(), &'static str> {
    let kind = &sub.kind;
    if (&kind.group, &kind.version, &kind.kind)
        != (&raw.kind.group, &raw.kind.version, &raw.kind.kind)
    {
        return Err("not the kind the guest asked for");
    }
    if kind.version.is_empty() || kind.kind.is_empty() {
        return Err("incomplete kind");
    }
    if sub.namespace.as_deref().is_some_and(|ns| !is_dns_label(ns)) {
        return Err("bad namespace");
    }
    let label_selector = sub.label_selector.as_deref();
    if label_selector.is_some_and(|s| s.trim().is_empty() || LabelSelector::parse(s).is_err()) {
        return Err("bad label selector");
    }
    let field_selector = sub.field_selector.as_deref();
    if field_selector.is_some_and(|s| s.trim().is_empty() || FieldSelector::parse(s).is_err()) {
        return Err("bad field selector");
    }
    if sub
        .resync_period
        .is_some_and(|period| !(MIN_RESYNC..=MAX_RESYNC).contains(&period))
    {
        return Err("resync period out of range");
    }
    let delivery = match raw.delivery {
        abi::DeliveryMode::EveryEvent => Delivery::EveryEvent,
        abi::DeliveryMode::Coalesced => Delivery::Coalesced,
    };
    if sub.delivery != delivery {
        return Err("not the delivery the guest asked for");
    }
    Ok(())
}

/// True when two subscriptions select the same objects: same kind and
/// namespace, and selectors with the same set of requirements (however
/// ordered, spaced or repeated; `==` is `=`).
fn same_objects(a: &Subscription, b: &Subscription) -> bool {
    a.kind == b.kind
        && a.namespace == b.namespace
        && label_meaning(a.label_selector.as_deref()) == label_meaning(b.label_selector.as_deref())
        && field_meaning(a.field_selector.as_deref()) == field_meaning(b.field_selector.as_deref())
}

/// A requirement or term: key or field, operator, values.
type Condition = (String, String, BTreeSet<String>);

fn label_meaning(selector: Option<&str>) -> Result<BTreeSet<Condition>, String> {
    let Some(text) = selector else {
        return Ok(BTreeSet::new());
    };
    let parsed = LabelSelector::parse(text).map_err(|e| e.to_string())?;
    Ok(parsed
        .requirements
        .into_iter()
        .map(|r| {
            (
                r.key,
                format!("{:?}", r.operator),
                r.values.into_iter().collect(),
            )
        })
        .collect())
}

fn field_meaning(selector: Option<&str>) -> Result<BTreeSet<Condition>, String> {
    let Some(text) = selector else {
        return Ok(BTreeSet::new());
    };
    let parsed = FieldSelector::parse(text).map_err(|e| e.to_string())?;
    Ok(parsed
        .terms
        .into_iter()
        .map(|t| {
            (
                t.field,
                format!("{:?}", t.operator),
                BTreeSet::from([t.value]),
            )
        })
        .collect())
}

/// An RFC 1123 label, written out again rather than borrowed from the
/// validator it checks.
fn is_dns_label(text: &str) -> bool {
    let alphanumeric = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    (1..=63).contains(&text.len())
        && text.chars().all(|c| alphanumeric(c) || c == '-')
        && text.starts_with(alphanumeric)
        && text.ends_with(alphanumeric)
}
