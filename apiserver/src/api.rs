//! Request handling: faults, routing, verbs, bodies and response encoding.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use http::{HeaderMap, Method, Request, Response, StatusCode, header};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::{Value, json};

use crate::admission::Admission;
use crate::admission::review::warning_header;
use crate::body::ResponseBody;
use crate::discovery;
use crate::faults::FaultState;
use crate::negotiate::{self, Encoding, Output, Protobuf, Refusal};
use crate::patch::PatchType;
use crate::router::{self, ResourcePath, Route};
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::ApiError;
use crate::storage::{
    DeleteOptions, ListParams, ListResult, Store, Target, WatchFrom, Write, WriteOptions,
    supports_field,
};
use crate::table::{self, IncludeObject};
use crate::watch::{self, WatchSpec};

/// Largest request body accepted.
const MAX_BODY: usize = 32 * 1024 * 1024;

/// What every request handler shares.
pub(crate) struct Shared {
    /// The objects.
    pub store: Arc<Store>,
    /// Fault injection.
    pub faults: Arc<FaultState>,
    /// Interval between watch bookmarks.
    pub bookmark_interval: Duration,
    /// Whether streaming lists are served.
    pub watch_list: bool,
    /// Whether built-in kinds (and errors) are answered in protobuf to clients preferring it.
    pub protobuf: bool,
    /// The address the server listens on.
    pub addr: SocketAddr,
    /// Admission webhooks' write path.
    pub admission: Admission,
}

type Query = HashMap<String, String>;

fn response(code: u16, content_type: &'static str, bytes: Bytes) -> Response<ResponseBody> {
    Response::builder()
        .status(StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header(header::CONTENT_TYPE, content_type)
        .header(header::CACHE_CONTROL, "no-cache, private")
        .body(ResponseBody::full(bytes))
        .expect("static response parts are valid")
}

fn json_response(code: u16, bytes: Bytes) -> Response<ResponseBody> {
    response(code, "application/json", bytes)
}

fn value_response(code: u16, value: &Value) -> Response<ResponseBody> {
    json_response(
        code,
        Bytes::from(serde_json::to_vec(value).expect("JSON values serialize")),
    )
}

/// The `Status` of `err`, in `encoding`.
fn error_response(err: &ApiError, encoding: Encoding) -> Response<ResponseBody> {
    let status = err.to_status();
    if encoding == Encoding::Protobuf {
        match crate::protobuf::encode::object(&status) {
            Ok(bytes) => return response(err.code, crate::protobuf::MEDIA_TYPE, bytes.into()),
            Err(e) => {
                tracing::warn!(error = %e, "a Status does not encode in protobuf; answering JSON")
            }
        }
    }
    value_response(err.code, &status)
}

/// `obj` answered with `code` in the negotiated encoding.
fn object_response(code: u16, obj: &Value, output: Output) -> Response<ResponseBody> {
    match output.encoding {
        Encoding::Json => value_response(code, obj),
        Encoding::Protobuf => match crate::protobuf::encode::object(obj) {
            Ok(bytes) => response(code, crate::protobuf::MEDIA_TYPE, bytes.into()),
            Err(e) => unencodable(&e),
        },
    }
}

/// The `500` of an object the server cannot write in protobuf (a value of the wrong type
/// for its field, which a real server would not have stored), in protobuf as a real server
/// writes an encoding failure.
fn unencodable(err: &crate::protobuf::encode::EncodeError) -> Response<ResponseBody> {
    tracing::warn!(error = %err, "a stored object cannot be answered in protobuf");
    error_response(
        &ApiError::internal(format!("cannot encode the answer in protobuf: {err}")),
        Encoding::Protobuf,
    )
}

/// The `403` of [`Faults::forbid_reads`](crate::Faults::forbid_reads) for
/// a `GET` of `uri`: a watch if it says `watch=true`, else a list.
fn forbidden_read(uri: &http::Uri) -> ApiError {
    let watch = uri
        .query()
        .map(|q| {
            form_urlencoded::parse(q.as_bytes())
                .any(|(k, v)| k == "watch" && (v == "true" || v == "1"))
        })
        .unwrap_or(false);
    let segments: Vec<&str> = uri.path().split('/').filter(|s| !s.is_empty()).collect();
    // /api/v1[/namespaces/NS]/RESOURCE or /apis/GROUP/VERSION[/namespaces/NS]/RESOURCE
    let (group, rest) = match segments.as_slice() {
        ["api", _version, rest @ ..] => ("", rest),
        ["apis", group, _version, rest @ ..] => (*group, rest),
        _ => ("", &segments[..]),
    };
    let (namespace, resource) = match rest {
        ["namespaces", namespace, resource, ..] => (Some(*namespace), *resource),
        [resource, ..] => (None, *resource),
        [] => (None, ""),
    };
    let verb = if watch { "watch" } else { "list" };
    ApiError::forbidden("herald", verb, resource, group, namespace)
}

/// Handle one HTTP request.
pub(crate) async fn handle(shared: Arc<Shared>, req: Request<Incoming>) -> Response<ResponseBody> {
    let errors = negotiate::status(header_str(req.headers(), header::ACCEPT), shared.protobuf);
    let latency = shared.faults.latency();
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    if let Some(hold) = shared
        .faults
        .hold_for(req.method().as_str(), req.uri().path())
    {
        hold.wait().await;
    }
    if shared.faults.take_failure() {
        return error_response(&ApiError::internal("injected failure"), errors);
    }
    if req.method() == Method::GET && shared.faults.forbids(req.uri().path()) {
        return error_response(&forbidden_read(req.uri()), errors);
    }
    if shared.faults.take_throttle(req.uri().path()) {
        let mut response = error_response(&ApiError::too_many_requests(1), errors);
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
        return response;
    }
    let (parts, body) = req.into_parts();
    let body = match http_body_util::Limited::new(body, MAX_BODY).collect().await {
        Ok(c) => c.to_bytes(),
        Err(e) => {
            return error_response(
                &ApiError::bad_request(format!("cannot read request body: {e}")),
                errors,
            );
        }
    };
    let query: Query = parts
        .uri
        .query()
        .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default();
    let path = parts.uri.path();
    tracing::debug!(method = %parts.method, uri = %parts.uri, "request");
    let route = router::route(path);
    let is_get = parts.method == Method::GET || parts.method == Method::HEAD;
    let result = match route {
        Route::Resource(rp) => {
            let mut warnings = Vec::new();
            let answer = resource(
                &shared,
                &parts.method,
                rp,
                &query,
                &parts.headers,
                body,
                &mut warnings,
            )
            .await;
            let mut response = match answer {
                Ok(r) => r,
                Err(e) => error_response(&e, errors),
            };
            add_warnings(&mut response, &warnings);
            return response;
        }
        _ if !is_get => Err(ApiError::method_not_allowed()),
        Route::Version => Ok(discovery::version()),
        Route::Health => return json_response(200, Bytes::from_static(b"ok")),
        Route::CoreVersions => Ok(discovery::core_versions(&shared.addr.to_string())),
        Route::Groups => Ok(discovery::groups(&shared.store.registry())),
        Route::Group(g) => {
            discovery::group(&shared.store.registry(), &g).ok_or_else(ApiError::unknown_path)
        }
        Route::Resources { group, version } => {
            discovery::resources(&shared.store.registry(), &group, &version)
                .ok_or_else(ApiError::unknown_path)
        }
        Route::OpenApiV3Root => Ok(discovery::openapi_v3_root(&shared.store.registry())),
        Route::OpenApiV3 { group, version } => {
            discovery::openapi_v3(&shared.store.registry(), &group, &version)
                .ok_or_else(ApiError::unknown_path)
        }
        Route::OpenApiV2 if header_str(&parts.headers, header::ACCEPT).contains("protobuf") => {
            return Response::builder()
                .status(StatusCode::OK)
                .header(header::CONTENT_TYPE, discovery::OPENAPI_V2_PROTOBUF)
                .body(ResponseBody::full(discovery::openapi_v2_protobuf()))
                .expect("static response parts are valid");
        }
        Route::OpenApiV2 => Ok(discovery::openapi_v2_json()),
        Route::Unknown => Err(ApiError::unknown_path()),
    };
    match result {
        Ok(v) => value_response(200, &v),
        Err(e) => error_response(&e, errors),
    }
}

/// Admission webhooks' warnings as `Warning` headers (each text once, in order), on
/// success and refusal alike, as the real server sends them.
fn add_warnings(response: &mut Response<ResponseBody>, warnings: &[String]) {
    let mut seen: Vec<&str> = Vec::new();
    for text in warnings {
        if seen.contains(&text.as_str()) {
            continue;
        }
        seen.push(text);
        match header::HeaderValue::from_str(&warning_header(text)) {
            Ok(value) => {
                response.headers_mut().append(header::WARNING, value);
            }
            Err(e) => tracing::warn!(error = %e, %text, "a webhook's warning is no header value"),
        }
    }
}

fn param<'a>(query: &'a Query, key: &str) -> Option<&'a str> {
    query.get(key).map(String::as_str)
}

fn flag(query: &Query, key: &str) -> bool {
    matches!(param(query, key), Some("1" | "true" | "True"))
}

fn header_str(headers: &HeaderMap, name: header::HeaderName) -> &str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// Parse a request body as JSON, YAML or Kubernetes protobuf, by its content type.
fn parse_body(headers: &HeaderMap, body: &[u8]) -> Result<Value, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request("the request body is empty"));
    }
    let ct = header_str(headers, header::CONTENT_TYPE);
    if crate::protobuf::is_protobuf(ct) {
        return crate::protobuf::decode(body);
    }
    let json = serde_json::from_slice::<Value>(body);
    match json {
        Ok(v) => Ok(v),
        Err(e) if ct.contains("yaml") => serde_yaml::from_slice::<Value>(body).map_err(|ye| {
            ApiError::bad_request(format!("cannot parse YAML body: {ye} (as JSON: {e})"))
        }),
        Err(e) => Err(ApiError::bad_request(format!(
            "the object provided is unrecognized or cannot be parsed: {e}"
        ))),
    }
}

fn list_params(target: &Target, query: &Query) -> Result<ListParams, ApiError> {
    let label = LabelSelector::parse(param(query, "labelSelector").unwrap_or(""))
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let field = FieldSelector::parse(param(query, "fieldSelector").unwrap_or(""))
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    for term in &field.terms {
        if !supports_field(&target.rt, &term.field) {
            return Err(ApiError::bad_request(format!(
                "field label not supported: {}",
                term.field
            )));
        }
    }
    let limit = match param(query, "limit") {
        None | Some("") => None,
        Some(l) => Some(
            l.parse::<usize>()
                .map_err(|_| ApiError::bad_request(format!("invalid limit {l:?}")))?,
        ),
    };
    Ok(ListParams {
        label,
        field,
        limit,
        continue_token: param(query, "continue").map(str::to_string),
        resource_version: param(query, "resourceVersion").map(str::to_string),
        rv_match: param(query, "resourceVersionMatch").map(str::to_string),
    })
}

async fn resource(
    shared: &Shared,
    method: &Method,
    rp: ResourcePath,
    query: &Query,
    headers: &HeaderMap,
    body: Bytes,
    warnings: &mut Vec<String>,
) -> Result<Response<ResponseBody>, ApiError> {
    let rt = shared
        .store
        .lookup(&rp.group, &rp.version, &rp.plural)
        .ok_or_else(ApiError::unknown_path)?;
    if rp.namespace.is_some() && !rt.namespaced {
        return Err(ApiError::unknown_path());
    }
    let status_only = match rp.subresource.as_deref() {
        None => false,
        Some("status") if rt.has_status => true,
        Some(_) => return Err(ApiError::unknown_path()),
    };
    let (storage_rt, view) = match rt.stored_as.as_ref().and_then(|id| shared.store.by_id(id)) {
        Some(storage) => (storage, Some(rt.clone())),
        None => (rt.clone(), None),
    };
    let target = Target {
        rt: storage_rt,
        version: rp.version.clone(),
        namespace: if rt.namespaced {
            rp.namespace.clone()
        } else {
            None
        },
        view,
    };
    let is_watch = rp.watch_prefix || flag(query, "watch");
    let protobuf = if !shared.protobuf {
        Protobuf::Off
    } else if rt.crd.is_none() && crate::protobuf::has_kind(&target.api_version(), &rt.kind) {
        Protobuf::On
    } else {
        Protobuf::Refused
    };
    let reading = *method == Method::GET || *method == Method::HEAD;
    let collection = is_watch || (reading && rp.name.is_none());
    let accept = header_str(headers, header::ACCEPT);
    // Negotiated before anything is done, as both refusals come first on a real server.
    let output = match negotiate::output(accept, protobuf, collection, is_watch) {
        Ok(output) => output,
        Err(Refusal::Route(refused)) => {
            return Ok(value_response(refused.code, &refused.to_status()));
        }
        Err(Refusal::Negotiation(refused)) => return Err(refused),
    };
    let table = output
        .table
        .then(|| IncludeObject::from_param(param(query, "includeObject")));
    let dry_run = param(query, "dryRun").is_some_and(|d| d == "All");
    let write = write_options(method, query, headers, dry_run)?;
    let store = &shared.store;
    let name = rp.name.as_deref();
    let asked = crate::admission::write::Asked {
        target: &target,
        subresource: rp.subresource.as_deref(),
        dry_run,
    };
    let admission = &shared.admission;
    match (method.clone(), name) {
        (Method::GET, _) if is_watch => {
            let mut params = list_params(&target, query)?;
            if let Some(n) = name {
                params.field.terms.push(crate::selector::FieldTerm {
                    field: "metadata.name".into(),
                    operator: crate::selector::FieldOperator::Equals,
                    value: n.to_string(),
                });
            }
            start_watch(shared, target, params, query, table, output.encoding)
        }
        (Method::GET | Method::HEAD, Some(n)) => {
            let obj = store.get(&target, n)?;
            match table {
                Some(include) => {
                    let t = table::table(&rt, vec![table::row(&rt, &obj, include)], None, None);
                    Ok(value_response(200, &t))
                }
                None => Ok(object_response(200, &obj, output)),
            }
        }
        (Method::GET | Method::HEAD, None) if !status_only => {
            let params = list_params(&target, query)?;
            let result = store.list(&target, &params)?;
            Ok(list_response(&target, result, table, output))
        }
        (Method::POST, None) if !status_only => {
            let obj = parse_body(headers, &body)?;
            let (created, _) = admission
                .write(store, &asked, Write::Create(obj), &write, warnings)
                .await?;
            Ok(object_response(201, &created, output))
        }
        (Method::PUT, Some(n)) => {
            let body = parse_body(headers, &body)?;
            let update = Write::Update {
                name: n,
                body,
                status_only,
            };
            let (updated, _) = admission
                .write(store, &asked, update, &write, warnings)
                .await?;
            Ok(object_response(200, &updated, output))
        }
        (Method::PATCH, Some(n)) => {
            let ct = header_str(headers, header::CONTENT_TYPE);
            let kind = PatchType::from_content_type(ct)
                .ok_or_else(|| ApiError::unsupported_media_type(ct))?;
            let patch = parse_body(headers, &body)?;
            let change = Write::Patch {
                name: n,
                kind,
                patch: &patch,
                status_only,
            };
            let (obj, created) = admission
                .write(store, &asked, change, &write, warnings)
                .await?;
            Ok(object_response(
                if created { 201 } else { 200 },
                &obj,
                output,
            ))
        }
        (Method::DELETE, _) if !status_only => {
            let opts = delete_options(query, &body)?;
            match name {
                Some(n) => {
                    let obj = admission.delete(store, &asked, n, &opts, warnings).await?;
                    Ok(object_response(200, &obj, output))
                }
                None => {
                    let params = list_params(&target, query)?;
                    let result = admission
                        .delete_collection(store, &asked, &params, &opts, warnings)
                        .await?;
                    Ok(list_response(&target, result, None, output))
                }
            }
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}

/// The options of a write: `dryRun`, the field manager (the `fieldManager` parameter, else
/// the client's `User-Agent` up to its first `/`, as the real server defaults it; required
/// for server-side apply) and `force` (only for apply).
fn write_options(
    method: &Method,
    query: &Query,
    headers: &HeaderMap,
    dry_run: bool,
) -> Result<WriteOptions, ApiError> {
    let applying = *method == Method::PATCH
        && PatchType::from_content_type(header_str(headers, header::CONTENT_TYPE))
            == Some(PatchType::Apply);
    let given = param(query, "fieldManager").filter(|m| !m.is_empty());
    if let Some(m) = given
        && m.chars().count() > 128
    {
        return Err(ApiError::invalid_causes(
            "PatchOptions",
            "meta.k8s.io",
            "",
            &[(
                "fieldManager".into(),
                "FieldValueTooLong",
                "Too long: may not be more than 128 bytes".into(),
            )],
        ));
    }
    let force = flag(query, "force");
    if applying && given.is_none() {
        return Err(ApiError::invalid_causes(
            "PatchOptions",
            "meta.k8s.io",
            "",
            &[(
                "fieldManager".into(),
                "FieldValueRequired",
                "Required value: is required for apply patch".into(),
            )],
        ));
    }
    if force && !applying && *method == Method::PATCH {
        return Err(ApiError::invalid_causes(
            "PatchOptions",
            "meta.k8s.io",
            "",
            &[(
                "force".into(),
                "FieldValueForbidden",
                "Forbidden: may not be specified for non-apply patch".into(),
            )],
        ));
    }
    let manager = given.map(str::to_string).unwrap_or_else(|| {
        let agent = header_str(headers, header::USER_AGENT);
        let prefix: String = agent
            .split('/')
            .next()
            .unwrap_or("")
            .chars()
            .take(128)
            .collect();
        if prefix.is_empty() {
            "unknown".to_string()
        } else {
            prefix
        }
    });
    Ok(WriteOptions {
        dry_run,
        field_manager: Some(manager),
        force,
        ..WriteOptions::default()
    })
}

/// Check a `propagationPolicy` value.
fn check_propagation(policy: Option<&str>) -> Result<(), ApiError> {
    match policy {
        None | Some("Foreground" | "Background" | "Orphan") => Ok(()),
        Some(other) => Err(ApiError::invalid_causes(
            "DeleteOptions",
            "meta.k8s.io",
            "",
            &[(
                "propagationPolicy".into(),
                "FieldValueNotSupported",
                format!(
                    "Unsupported value: \"{other}\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
                ),
            )],
        )),
    }
}

/// `DeleteOptions` from the query and the body. Foreground and Background both delete
/// dependents at once (there is no garbage collector to wait for); Orphan keeps them.
fn delete_options(query: &Query, body: &[u8]) -> Result<DeleteOptions, ApiError> {
    check_propagation(param(query, "propagationPolicy"))?;
    let mut opts = DeleteOptions {
        dry_run: param(query, "dryRun").is_some_and(|d| d == "All"),
        orphan: param(query, "propagationPolicy") == Some("Orphan")
            || param(query, "orphanDependents") == Some("true"),
        propagation: param(query, "propagationPolicy").map(str::to_string),
        ..DeleteOptions::default()
    };
    if !body.iter().all(u8::is_ascii_whitespace) {
        // client-go sends its DeleteOptions in protobuf when it talks protobuf (helm's
        // release Secrets), and in JSON otherwise: told apart by the magic bytes.
        let v: Value = if body.starts_with(crate::protobuf::MAGIC) {
            crate::protobuf::decode(body)?
        } else {
            serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("cannot parse DeleteOptions: {e}")))?
        };
        check_propagation(v["propagationPolicy"].as_str())?;
        if v["propagationPolicy"] == "Orphan" || v["orphanDependents"] == true {
            opts.orphan = true;
        }
        if let Some(policy) = v["propagationPolicy"].as_str() {
            opts.propagation = Some(policy.to_string());
        }
        if v["dryRun"]
            .as_array()
            .is_some_and(|d| d.iter().any(|x| x == "All"))
        {
            opts.dry_run = true;
        }
        opts.precondition_rv = v["preconditions"]["resourceVersion"]
            .as_str()
            .map(str::to_string);
        opts.precondition_uid = v["preconditions"]["uid"].as_str().map(str::to_string);
    }
    Ok(opts)
}

/// Encode a list page as negotiated (JSON items are serialized straight from the shared
/// objects).
fn list_response(
    target: &Target,
    result: ListResult,
    table: Option<IncludeObject>,
    output: Output,
) -> Response<ResponseBody> {
    let rt = &target.rt;
    if let Some(include) = table {
        let rows = result
            .items
            .iter()
            .map(|o| table::row(rt, &target.present(o.clone()), include))
            .collect();
        let t = table::table(rt, rows, Some(result.rv), result.continue_token.as_deref());
        return value_response(200, &t);
    }
    let mut metadata = json!({"resourceVersion": result.rv.to_string()});
    if let Some(c) = &result.continue_token {
        metadata["continue"] = json!(c);
    }
    if let Some(r) = result.remaining {
        metadata["remainingItemCount"] = json!(r);
    }
    if output.encoding == Encoding::Protobuf {
        let items = result.items.iter().map(|o| target.present(o.clone()));
        return match crate::protobuf::encode::list(
            &target.api_version(),
            &rt.list_kind,
            &metadata,
            items,
        ) {
            Ok(bytes) => response(200, crate::protobuf::MEDIA_TYPE, bytes.into()),
            Err(e) => unencodable(&e),
        };
    }
    let head = json!({
        "kind": rt.list_kind,
        "apiVersion": target.api_version(),
        "metadata": metadata,
    });
    let mut buf = BytesMut::with_capacity(256 + result.items.len() * 1024);
    let head_bytes = serde_json::to_vec(&head).expect("JSON values serialize");
    buf.put_slice(&head_bytes[..head_bytes.len() - 1]);
    buf.put_slice(b",\"items\":[");
    let mut writer = buf.writer();
    for (i, item) in result.items.iter().enumerate() {
        if i > 0 {
            std::io::Write::write_all(&mut writer, b",").expect("writing to memory");
        }
        serde_json::to_writer(&mut writer, &*target.present(item.clone()))
            .expect("JSON values serialize");
    }
    let mut buf = writer.into_inner();
    buf.put_slice(b"]}");
    json_response(200, buf.freeze())
}

fn start_watch(
    shared: &Shared,
    target: Target,
    params: ListParams,
    query: &Query,
    table: Option<IncludeObject>,
    encoding: Encoding,
) -> Result<Response<ResponseBody>, ApiError> {
    let send_initial_events = flag(query, "sendInitialEvents");
    if send_initial_events && !shared.watch_list {
        return Err(ApiError::invalid_kind(
            "ListOptions",
            "meta.k8s.io",
            "",
            "sendInitialEvents",
            "Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
        ));
    }
    if send_initial_events && param(query, "resourceVersionMatch") != Some("NotOlderThan") {
        return Err(ApiError::invalid_kind(
            "ListOptions",
            "meta.k8s.io",
            "",
            "resourceVersionMatch",
            "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ));
    }
    let timeout = match param(query, "timeoutSeconds") {
        None | Some("") => None,
        Some(t) => Some(Duration::from_secs(t.parse::<u64>().map_err(|_| {
            ApiError::bad_request(format!("invalid timeoutSeconds {t:?}"))
        })?)),
    };
    let from = WatchFrom {
        resource_version: params.resource_version.clone(),
        send_initial_events,
    };
    // Counted as open (and reached by a drop) from here; refused after, if
    // watches are failing: a test that turns failures on, drops every
    // watch and sees none open knows that none can be opened.
    let kill = shared.faults.kill_signal();
    if shared.faults.watches_failing() {
        return Err(ApiError::internal("injected failure: watches are failing"));
    }
    let (start, rx) = shared.store.watch(&target, &from)?;
    let timeout = if shared.faults.watches_closing() {
        Some(std::time::Duration::ZERO)
    } else {
        timeout
    };
    let spec = WatchSpec {
        target,
        label: params.label,
        field: params.field,
        bookmarks: flag(query, "allowWatchBookmarks"),
        bookmark_interval: shared.bookmark_interval,
        timeout,
        table,
        encoding,
    };
    let content_type = match encoding {
        Encoding::Json => "application/json",
        Encoding::Protobuf => crate::protobuf::WATCH_MEDIA_TYPE,
    };
    let body = watch::spawn(shared.store.clone(), spec, start, rx, kill);
    Ok(Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, content_type)
        .header(header::CACHE_CONTROL, "no-cache, private")
        .body(ResponseBody::Stream(body))
        .expect("static response parts are valid"))
}
