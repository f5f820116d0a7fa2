//! Content negotiation of answers, as kube-apiserver does it, checked against v1.36.3:
//!
//! * a built-in kind's routes are go-restful's, which first refuse a request none of whose
//!   `Accept` types (parameters dropped) is `*/*` or one the route produces (JSON, YAML,
//!   protobuf, and for the collection's `GET` their watch streams): `406` in JSON saying
//!   `406: Not Acceptable` and the available representations, before anything is done;
//! * then `negotiation.NegotiateMediaTypeOptions` over `goautoneg.ParseAccept`: the clauses
//!   ordered by quality and specificity, the first naming a type the endpoint can write wins,
//!   in the order JSON, YAML, protobuf; no `Accept`, `*/*` and `application/*` mean JSON. A
//!   custom resource's handler lists protobuf among its types but never chooses it for the
//!   object; nothing acceptable there is a `406` Status ("only the following media types
//!   are accepted: …") encoded like any error, which is protobuf when the `Accept` names it;
//! * errors (`Status`, which has a protobuf form) are negotiated the same way, and written
//!   as JSON when nothing is acceptable.
//!
//! Knowingly approximated: a YAML clause is answered in JSON (the server writes no YAML);
//! Tables are JSON only (as on a real server); a protobuf clause asking for a conversion
//! (`as=PartialObjectMetadata`) is passed over, and a JSON one is answered with the whole
//! object, as before negotiation existed.

use crate::status::ApiError;

/// How an answer is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    /// `application/json`.
    Json,
    /// `application/vnd.kubernetes.protobuf` (`;stream=watch` for watches).
    Protobuf,
}

/// Whether an endpoint can answer in protobuf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protobuf {
    /// The server answers JSON only: protobuf is not among its types at all.
    Off,
    /// A custom resource: the type is among the server's (a 406 names it) but never chosen
    /// for the object, as kube-apiserver's CRD handler restricts its serializers.
    Refused,
    /// A built-in kind (or a `Status`): chosen when the clause that wins names it.
    On,
}

/// What a request's `Accept` settles for its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Output {
    /// The encoding.
    pub encoding: Encoding,
    /// Whether the winning clause asks for a Table (`as=Table`).
    pub table: bool,
}

/// Why no answer is acceptable.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Refusal {
    /// go-restful's, for a built-in kind: written as JSON whatever the `Accept`.
    Route(ApiError),
    /// The negotiation's (a custom resource's): a `Status` encoded like any error.
    Negotiation(ApiError),
}

/// The answer to a request with `accept` at an endpoint that can answer in `protobuf`;
/// `collection` for a `GET` of a collection (a list or a watch), whose route also produces
/// the watch streams, `watch` for a watch.
pub(crate) fn output(
    accept: &str,
    protobuf: Protobuf,
    collection: bool,
    watch: bool,
) -> Result<Output, Refusal> {
    let json = Output {
        encoding: Encoding::Json,
        table: false,
    };
    if accept.trim().is_empty() {
        return Ok(json);
    }
    let offered = offers(protobuf);
    if protobuf != Protobuf::Refused {
        let mut produces: Vec<String> = offered.iter().map(Offer::name).collect();
        if collection {
            produces.extend(
                offered
                    .iter()
                    .filter(|o| o.streams)
                    .map(|o| format!("{};stream=watch", o.name())),
            );
        }
        let routed = accept.split(',').any(|each| {
            let bare = each.split(';').next().unwrap_or("").trim();
            bare == "*/*" || produces.iter().any(|p| p == bare)
        });
        if !routed {
            return Err(Refusal::Route(ApiError::not_acceptable_route(&produces)));
        }
    }
    if let Some(output) = first_accepted(accept, offered, protobuf) {
        return Ok(output);
    }
    let streams = watch && protobuf != Protobuf::Refused;
    let names: Vec<String> = offered
        .iter()
        .filter(|o| !streams || o.streams)
        .map(|o| {
            if streams {
                format!("{};stream=watch", o.name())
            } else {
                o.name()
            }
        })
        .collect();
    Err(Refusal::Negotiation(ApiError::not_acceptable(&names)))
}

/// The encoding of a `Status` (an error) for a request with `accept`: protobuf when the
/// server answers protobuf and the request prefers it, else JSON (also when nothing is
/// acceptable: kube-apiserver then writes the error as raw JSON).
pub(crate) fn status(accept: &str, protobuf: bool) -> Encoding {
    let protobuf = if protobuf {
        Protobuf::On
    } else {
        Protobuf::Off
    };
    first_accepted(accept, offers(protobuf), protobuf).map_or(Encoding::Json, |o| o.encoding)
}

/// The first of `offered` the clauses of `accept`, in order, take.
fn first_accepted(accept: &str, offered: &[Offer], protobuf: Protobuf) -> Option<Output> {
    clauses(accept).iter().find_map(|clause| {
        offered.iter().find_map(|offer| {
            let named = (clause.ty == offer.ty
                && (clause.subtype == offer.subtype || clause.subtype == "*"))
                || (clause.ty == "*" && clause.subtype == "*");
            named.then(|| accepts(clause, offer, protobuf)).flatten()
        })
    })
}

/// A type the server can write.
#[derive(Debug, Clone, Copy)]
struct Offer {
    ty: &'static str,
    subtype: &'static str,
    encoding: Encoding,
    /// Whether it has a stream form (`stream=watch`).
    streams: bool,
}

impl Offer {
    fn name(&self) -> String {
        format!("{}/{}", self.ty, self.subtype)
    }
}

/// The server's types in kube-apiserver's order (YAML answered as JSON).
fn offers(protobuf: Protobuf) -> &'static [Offer] {
    const JSON: Offer = Offer {
        ty: "application",
        subtype: "json",
        encoding: Encoding::Json,
        streams: true,
    };
    const YAML: Offer = Offer {
        ty: "application",
        subtype: "yaml",
        encoding: Encoding::Json,
        streams: false,
    };
    const PROTOBUF: Offer = Offer {
        ty: "application",
        subtype: "vnd.kubernetes.protobuf",
        encoding: Encoding::Protobuf,
        streams: true,
    };
    match protobuf {
        Protobuf::Off => &[JSON, YAML],
        Protobuf::Refused | Protobuf::On => &[JSON, YAML, PROTOBUF],
    }
}

/// Whether `offered` takes `clause`'s parameters (`acceptMediaTypeOptions` and the request
/// scope's restrictions).
fn accepts(clause: &Clause<'_>, offered: &Offer, protobuf: Protobuf) -> Option<Output> {
    if offered.encoding == Encoding::Protobuf && protobuf != Protobuf::On {
        return None;
    }
    let mut table = false;
    let json = offered.encoding == Encoding::Json;
    for (key, value) in &clause.params {
        match (*key, *value) {
            ("stream", v) if !v.is_empty() && (!offered.streams || v != "watch") => return None,
            ("as", "Table") if json => table = true,
            ("as", v) if json && v.starts_with("PartialObjectMetadata") => {}
            ("as", _) => return None,
            _ => {}
        }
    }
    Some(Output {
        encoding: offered.encoding,
        table,
    })
}

/// One media range of an `Accept` header.
#[derive(Debug)]
struct Clause<'a> {
    ty: &'a str,
    subtype: &'a str,
    q: f64,
    params: Vec<(&'a str, &'a str)>,
}

/// The clauses of `header` in the order kube-apiserver tries them: `goautoneg.ParseAccept`
/// (a range without a `/` other than `*` is skipped; a `q` that does not parse is 0) and its
/// sort, which for headers of up to twelve clauses (Go's sort switches to insertion sort
/// below that) moves a clause before another when its quality is higher, or its type or
/// subtype is not a wildcard where the other's is.
fn clauses(header: &str) -> Vec<Clause<'_>> {
    let mut out = Vec::new();
    for part in header.split(',') {
        let mut pieces = part.split(';');
        let range = pieces.next().unwrap_or("");
        let halves: Vec<&str> = range.split('/').collect();
        let (ty, subtype) = match halves.as_slice() {
            [star] if *star == "*" => ("*", "*"),
            [ty, subtype] => (ty.trim(), subtype.trim()),
            _ => continue,
        };
        let mut clause = Clause {
            ty,
            subtype,
            q: 1.0,
            params: Vec::new(),
        };
        for param in pieces {
            let Some((key, value)) = param.split_once('=') else {
                continue;
            };
            let key = key.trim();
            if key == "q" {
                clause.q = value.parse().unwrap_or(0.0);
            } else {
                clause.params.push((key, value.trim()));
            }
        }
        out.push(clause);
    }
    let less = |a: &Clause<'_>, b: &Clause<'_>| {
        a.q > b.q || (a.ty != "*" && b.ty == "*") || (a.subtype != "*" && b.subtype == "*")
    };
    for i in 1..out.len() {
        let mut j = i;
        while j > 0 && less(&out[j], &out[j - 1]) {
            out.swap(j, j - 1);
            j -= 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoding(accept: &str, protobuf: Protobuf) -> Encoding {
        output(accept, protobuf, false, false).unwrap().encoding
    }

    const HOST: &str = "application/vnd.kubernetes.protobuf, application/json";

    #[test]
    fn the_first_acceptable_clause_wins() {
        assert_eq!(encoding(HOST, Protobuf::On), Encoding::Protobuf);
        assert_eq!(encoding(HOST, Protobuf::Refused), Encoding::Json);
        assert_eq!(encoding(HOST, Protobuf::Off), Encoding::Json);
        assert_eq!(
            encoding(
                "application/json, application/vnd.kubernetes.protobuf",
                Protobuf::On
            ),
            Encoding::Json
        );
        assert_eq!(
            output(
                "application/vnd.kubernetes.protobuf;stream=watch",
                Protobuf::On,
                true,
                true
            )
            .unwrap()
            .encoding,
            Encoding::Protobuf
        );
    }

    #[test]
    fn no_accept_and_wildcards_mean_json() {
        for accept in ["", "*/*", "application/yaml"] {
            assert_eq!(encoding(accept, Protobuf::On), Encoding::Json, "{accept:?}");
        }
        // go-restful routes no `application/*` to a built-in kind; a custom resource's
        // handler reads it as JSON.
        assert_eq!(encoding("application/*", Protobuf::Refused), Encoding::Json);
    }

    #[test]
    fn quality_and_specificity_order_the_clauses_as_goautoneg_does() {
        // Both seen on kube-apiserver v1.36.3: protobuf answered.
        assert_eq!(
            encoding(
                "application/json;q=0.5, application/vnd.kubernetes.protobuf",
                Protobuf::On
            ),
            Encoding::Protobuf
        );
        // goautoneg puts a specific type before a wildcard whatever their qualities.
        assert_eq!(
            encoding(
                "*/*, application/vnd.kubernetes.protobuf;q=0.5",
                Protobuf::On
            ),
            Encoding::Protobuf
        );
    }

    #[test]
    fn tables_are_json_and_a_protobuf_table_is_passed_over() {
        let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
        assert_eq!(
            output(kubectl, Protobuf::On, false, false).unwrap(),
            Output {
                encoding: Encoding::Json,
                table: true
            }
        );
        let table_in_protobuf =
            "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io, application/json";
        assert_eq!(
            output(table_in_protobuf, Protobuf::On, false, false).unwrap(),
            Output {
                encoding: Encoding::Json,
                table: false
            }
        );
    }

    /// The messages kube-apiserver v1.36.3 answered.
    #[test]
    fn nothing_acceptable_is_406_worded_as_the_real_server_words_it() {
        let Err(Refusal::Negotiation(err)) = output(
            "application/vnd.kubernetes.protobuf",
            Protobuf::Refused,
            true,
            true,
        ) else {
            panic!("a custom resource refuses protobuf alone in its negotiation");
        };
        assert_eq!((err.code, &*err.reason), (406, "NotAcceptable"));
        assert_eq!(
            err.message,
            "only the following media types are accepted: application/json, application/yaml, \
             application/vnd.kubernetes.protobuf"
        );
        let Err(Refusal::Route(err)) = output("text/html", Protobuf::On, false, false) else {
            panic!("go-restful refuses text/html");
        };
        assert_eq!(
            err.message,
            "406: Not Acceptable\n\nAvailable representations: application/json, \
             application/yaml, application/vnd.kubernetes.protobuf"
        );
        assert_eq!(err.details, Some(serde_json::json!({})));
        let Err(Refusal::Route(err)) = output("text/html", Protobuf::On, true, true) else {
            panic!("go-restful refuses text/html");
        };
        assert_eq!(
            err.message,
            "406: Not Acceptable\n\nAvailable representations: application/json, \
             application/yaml, application/vnd.kubernetes.protobuf, \
             application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
        );
        let Err(Refusal::Route(err)) = output(
            "application/vnd.kubernetes.protobuf",
            Protobuf::Off,
            false,
            false,
        ) else {
            panic!("a server without protobuf refuses protobuf alone");
        };
        assert_eq!(
            err.message,
            "406: Not Acceptable\n\nAvailable representations: application/json, application/yaml"
        );
    }

    #[test]
    fn errors_follow_the_clause_order_and_the_server_switch() {
        assert_eq!(status(HOST, true), Encoding::Protobuf);
        assert_eq!(
            status("application/vnd.kubernetes.protobuf", true),
            Encoding::Protobuf
        );
        assert_eq!(status(HOST, false), Encoding::Json);
        assert_eq!(status("text/html", true), Encoding::Json);
        assert_eq!(status("", true), Encoding::Json);
    }
}
