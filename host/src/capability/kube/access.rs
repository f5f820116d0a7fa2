//! One plugin's way to the API server: its declared (and granted) rules,
//! its mode, its rate limit and the backend, and the path every call takes
//! through them: grant check, rate limit, the request within the deadline,
//! audit.

use super::blind;
use super::request::{ApiRequest, KubeError, Operation, Target};
use super::rules::{WriteRule, permits, permits_in};
use super::shadow::Values;
use crate::capability::rate::{RateLimit, TokenBucket};
use crate::capability::reads::{Read, Reads};
use crate::capability::{AuditLog, ClusterAccess, Mode};
use crate::cluster::ClusterName;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What one loaded plugin may do through `kube` (and what its Events go
/// through): shared by all its instances.
#[derive(Debug)]
pub struct KubeAccess {
    plugin: Arc<str>,
    rules: Vec<WriteRule>,
    reads: Reads,
    mode: Mode,
    access: Option<ClusterAccess>,
    bucket: TokenBucket,
    audit_log: Arc<AuditLog>,
    /// Why writes are refused whatever the rules say (an admission call has
    /// no side effects); `None`: the rules decide.
    writes_refused: Option<&'static str>,
    /// The operator's write grants, whose `clusters` say where the declared
    /// rules apply; `None` (the offline tools) for every cluster.
    granted: Option<Vec<WriteRule>>,
}

impl KubeAccess {
    /// The access of `plugin`, whose declared `rules` the operator's grant
    /// covers, reading what `reads` allows, in `mode`, at `rate`, through
    /// `access` (`None`: offline, every call answers `unavailable`).
    pub fn new(
        plugin: &str,
        rules: Vec<WriteRule>,
        reads: Reads,
        mode: Mode,
        rate: RateLimit,
        access: Option<ClusterAccess>,
        audit_log: Arc<AuditLog>,
    ) -> Self {
        KubeAccess {
            plugin: plugin.into(),
            rules,
            reads,
            mode,
            access,
            bucket: TokenBucket::new(rate),
            audit_log,
            writes_refused: None,
            granted: None,
        }
    }

    /// The same access with the declared rules applying only in the
    /// clusters the operator's `granted` rules cover for each call.
    pub fn within_grants(mut self, granted: Vec<WriteRule>) -> Self {
        self.granted = Some(granted);
        self
    }

    /// The same access with every write refused, saying `why`: reads (a
    /// `get`) still go through the rules.
    pub fn refusing_writes(mut self, why: &'static str) -> Self {
        self.writes_refused = Some(why);
        self
    }

    /// The plugin's name.
    pub fn plugin(&self) -> &str {
        &self.plugin
    }

    /// Its mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Its declared (and granted) rules.
    pub fn rules(&self) -> &[WriteRule] {
        &self.rules
    }

    /// What it may read.
    pub fn reads(&self) -> &Reads {
        &self.reads
    }

    /// The field manager of its writes.
    pub fn field_manager(&self) -> String {
        format!("herald.{}", self.plugin)
    }

    /// Where its calls are counted, if it reaches a cluster.
    pub(crate) fn access(&self) -> Option<&ClusterAccess> {
        self.access.as_ref()
    }

    /// One `kube` call to `cluster` (`None`: the default one): checked
    /// against the rules and the grants of that cluster, rate-limited, sent
    /// within `deadline` (the handler call's), audited. The answer is JSON
    /// text.
    pub async fn call(
        &self,
        target: Target,
        operation: Operation,
        deadline: Option<Instant>,
        cluster: Option<&ClusterName>,
    ) -> Result<String, KubeError> {
        let mut request = ApiRequest {
            target,
            operation,
            dry_run: self.mode.is_dry_run(),
            field_manager: self.field_manager(),
            cluster: cluster.cloned(),
        };
        let creating = matches!(request.operation, Operation::Create { .. });
        if let Err(refused) = request.target.check(creating) {
            self.audit(&request, &Err(refused.clone()), None, false);
            return Err(refused);
        }
        if let Some(why) = self.writes_refused
            && request.operation.writes()
        {
            let error = KubeError::NotGranted(format!(
                "plugin {:?} may not {}: {why}",
                self.plugin,
                request.access()
            ));
            self.audit(&request, &Err(error.clone()), None, false);
            return Err(error);
        }
        if !permits(&self.rules, &request.access()) {
            let error = KubeError::NotGranted(format!(
                "plugin {:?} has no write rule for {}: declare it in the manifest and have the \
                 operator grant it",
                self.plugin,
                request.access()
            ));
            self.audit(&request, &Err(error.clone()), None, false);
            return Err(error);
        }
        let default_cluster = self.reads.policy.default_cluster_name();
        if let Some(granted) = &self.granted
            && !permits_in(granted, &request.access(), cluster, default_cluster)
        {
            let error = KubeError::NotGranted(format!(
                "plugin {:?} may not {} in {}: no write grant covers that cluster (the \
                 operator names it in plugins.{}.grants.writes[].clusters)",
                self.plugin,
                request.access(),
                shown_cluster(cluster, default_cluster),
                self.plugin,
            ));
            self.audit(&request, &Err(error.clone()), None, false);
            return Err(error);
        }
        let read = Read {
            group: &request.target.gvk.group,
            kind: &request.target.gvk.kind,
            namespace: request.target.namespace.as_deref(),
            cluster,
        };
        // A write to a kind the plugin may not read is blind: what would
        // read the object is refused, and nothing the server says comes
        // back (blind.rs).
        let unreadable = match self.reads.allows(&read) {
            Some(_) => None,
            None => Some(self.reads.refusal(&self.plugin, &read)),
        };
        if let Some(why) = &unreadable {
            if !request.operation.writes() {
                let error = KubeError::NotGranted(why.clone());
                self.audit(&request, &Err(error.clone()), None, false);
                return Err(error);
            }
            match blind::check(request.operation.clone(), why) {
                Ok(operation) => request.operation = operation,
                Err(refused) => {
                    self.audit(&request, &Err(refused.clone()), None, false);
                    return Err(refused);
                }
            }
        }
        // What the dry-run report may show: values only of kinds the plugin
        // may read and that are not sensitive (a Secret's data never
        // reaches a log line).
        let values =
            if unreadable.is_some() || self.reads.policy.is_sensitive(read.group, read.kind) {
                Values::Withheld
            } else {
                Values::Shown
            };
        let before = if request.dry_run && request.operation.writes() {
            self.before_state(&request, deadline).await
        } else {
            None
        };
        let started = Instant::now();
        let answer = self.send(request.clone(), deadline).await;
        let latency = answer
            .as_ref()
            .map_or_else(|(_, sent)| *sent, |_| true)
            .then(|| started.elapsed());
        // Only what reached the server is withheld: the host's own refusals
        // (rate limit, no cluster) hold nothing of the object.
        let answer = answer.map_err(|(error, sent)| match &unreadable {
            Some(why) if sent => blind::withhold(
                error,
                request.operation.verb().as_str(),
                &request.target,
                why,
            ),
            _ => error,
        });
        if request.dry_run
            && let Ok(after) = &answer
        {
            self.audit_log.record(|| {
                super::log_shadow(&self.plugin, &request, before.as_deref(), after, values)
            });
        }
        self.audit(&request, &answer, latency, latency.is_some());
        // A write answers with the object: the plugin gets it only if it may
        // read it, otherwise only which object it wrote (a write grant on
        // Secrets is not a read grant on them).
        answer.map(|body| match unreadable {
            None => body,
            Some(_) => receipt(&body),
        })
    }

    /// In dry-run, the object as it is before a write, to say what the write
    /// would change (best effort: a failed read just omits the diff).
    async fn before_state(
        &self,
        request: &ApiRequest,
        deadline: Option<Instant>,
    ) -> Option<String> {
        if matches!(request.operation, Operation::Create { .. }) {
            return None;
        }
        let get = ApiRequest {
            operation: Operation::Get,
            target: Target {
                subresource: None,
                ..request.target.clone()
            },
            ..request.clone()
        };
        self.send(get, deadline).await.ok()
    }

    /// Sends `request` once the rate limit admits it, within the deadline.
    /// The error says whether the request was sent.
    pub(crate) async fn send(
        &self,
        request: ApiRequest,
        deadline: Option<Instant>,
    ) -> Result<String, (KubeError, bool)> {
        let Some(access) = &self.access else {
            return Err((
                KubeError::Unavailable("this host has no connection to a cluster".into()),
                false,
            ));
        };
        let now = Instant::now();
        let budget = crate::capability::call::request_budget(deadline, Duration::from_secs(30));
        match self.bucket.reserve(now, budget) {
            Err(too_long) => {
                access.stats.kube.refused(&self.plugin);
                let limit = self.bucket.limit();
                return Err((
                    KubeError::TooManyRequests {
                        message: format!(
                            "the plugin's API rate limit ({} per second, burst {}) cannot admit \
                             the call before its deadline",
                            limit.qps, limit.burst
                        ),
                        retry_after: Some(too_long.0),
                    },
                    false,
                ));
            }
            Ok(wait) if !wait.is_zero() => {
                access.stats.kube.waited(&self.plugin, wait);
                tokio::time::sleep(wait).await;
            }
            Ok(_) => {}
        }
        let left = budget.saturating_sub(now.elapsed());
        match tokio::time::timeout(left, access.api.send(request)).await {
            Ok(answer) => answer.map_err(|error| (error, true)),
            Err(_) => Err((
                KubeError::Timeout(format!(
                    "no answer within the handler call's deadline ({} ms left for the request)",
                    left.as_millis()
                )),
                true,
            )),
        }
    }

    /// Writes the call's audit line and counts it; `latency` is that of a
    /// call that reached the server. A call in dry-run that `reached` it
    /// says what it *would* have done (`would-succeed`, `would-conflict`,
    /// …), since nothing persisted; a refusal of the host's own (grant,
    /// identifier, rate limit) is what it is.
    pub(crate) fn audit(
        &self,
        request: &ApiRequest,
        answer: &Result<String, KubeError>,
        latency: Option<Duration>,
        reached: bool,
    ) {
        let would = request.dry_run && reached;
        let (outcome, detail) = match answer {
            Ok(_) if would => ("would-succeed", String::new()),
            Ok(_) => ("ok", String::new()),
            Err(error) if would => (error.would_outcome(), error.to_string()),
            Err(error) => (error.outcome(), error.to_string()),
        };
        let body = answer.as_ref().ok().map(String::as_str);
        let cluster = request.cluster.as_ref().map_or(
            self.reads.policy.default_cluster_name(),
            ClusterName::as_str,
        );
        self.audit_log.record(|| {
            super::audit_line(
                &self.plugin,
                cluster,
                request,
                body,
                outcome,
                latency,
                &detail,
            )
        });
        if let Some(access) = &self.access {
            access
                .stats
                .kube
                .record(&self.plugin, request, outcome, latency);
        }
    }
}

/// A write's answer reduced to which object was written: `apiVersion`,
/// `kind`, and the metadata that identify it (name, namespace, uid,
/// resourceVersion, generation), for a plugin that may not read the kind.
/// An answer that is not a JSON object is replaced by `{}`.
fn receipt(body: &str) -> String {
    const IDENTITY: &[&str] = &["name", "namespace", "uid", "resourceVersion", "generation"];
    let Ok(Value::Object(object)) = serde_json::from_str::<Value>(body) else {
        return "{}".to_owned();
    };
    let mut kept = serde_json::Map::new();
    for field in ["apiVersion", "kind"] {
        if let Some(value) = object.get(field) {
            kept.insert(field.to_owned(), value.clone());
        }
    }
    if let Some(Value::Object(metadata)) = object.get("metadata") {
        let identity: serde_json::Map<String, Value> = metadata
            .iter()
            .filter(|(key, _)| IDENTITY.contains(&key.as_str()))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        kept.insert("metadata".to_owned(), Value::Object(identity));
    }
    Value::Object(kept).to_string()
}

/// `cluster` as a message names it.
fn shown_cluster(cluster: Option<&ClusterName>, default_cluster: &str) -> String {
    match cluster {
        Some(name) => format!("cluster {:?}", name.as_str()),
        None => format!("the default cluster {default_cluster:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capability::kube::{ApiBackend, PatchType, classify};
    use crate::capability::log::LogRate;
    use crate::capability::reads::ReadPolicy;
    use crate::gvk::Gvk;
    use futures::future::BoxFuture;
    use serde_json::{Value, json};

    /// What kube-apiserver v1.36.3 answered a merge patch giving a Secret's
    /// `data.token` a number (recorded with curl): the whole patched
    /// object, every value of `data` with it, quoted as the invalid value of
    /// `patch` by its patch handler. A JSON Patch `replace` does the same.
    const QUOTED: &str = include_str!("testdata/merge-patch-quotes-the-object.json");

    /// The object as it is, and as a write would leave it.
    const STORED: &str = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"db","namespace":"team","uid":"u-1","resourceVersion":"7"},"data":{"password":"hunter2"}}"#;
    const WRITTEN: &str = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"db","namespace":"team","uid":"u-1","resourceVersion":"8"},"data":{"password":"hunter3"}}"#;

    /// Answers gets with `STORED` and writes with `write`.
    #[derive(Debug)]
    struct Server {
        write: Result<&'static str, String>,
    }

    impl ApiBackend for Server {
        fn send(&self, request: ApiRequest) -> BoxFuture<'static, Result<String, KubeError>> {
            let answer = match (&request.operation, &self.write) {
                (Operation::Get, _) => Ok(STORED.to_owned()),
                (_, Ok(object)) => Ok((*object).to_owned()),
                (_, Err(status)) => Err(classify(422, status, None)),
            };
            Box::pin(async move { answer })
        }
    }

    /// A plugin allowed to patch `kind` in every namespace, reading by
    /// `policy` alone, answered by `server`.
    fn blind_writer(kind: &str, policy: ReadPolicy, mode: Mode, server: Server) -> KubeAccess {
        let rule = WriteRule {
            verbs: [crate::capability::kube::Verb::Patch].into(),
            group: String::new(),
            kind: kind.into(),
            subresource: None,
            namespaces: ["*".to_owned()].into(),
            clusters: Default::default(),
        };
        KubeAccess::new(
            "blind",
            vec![rule],
            Reads {
                policy,
                granted: Vec::new(),
            },
            mode,
            RateLimit::default(),
            Some(ClusterAccess::new(Arc::new(server))),
            Arc::new(AuditLog::new("blind", LogRate::default(), None)),
        )
    }

    /// Runs `call` on a current-thread runtime and returns it with the JSON
    /// log lines it wrote.
    fn logged<T>(call: impl std::future::Future<Output = T>) -> (T, String) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut answer = None;
        let log = crate::logging::tests::written_json(|| answer = Some(runtime.block_on(call)));
        (answer.expect("the call ran"), log)
    }

    fn patch(kind: &str, patch_type: PatchType, body: &str) -> (Target, Operation) {
        let target = Target {
            gvk: Gvk::new("", "v1", kind),
            namespace: Some("team".into()),
            name: "db".into(),
            subresource: None,
        };
        let operation = Operation::Patch {
            patch_type,
            body: body.into(),
        };
        (target, operation)
    }

    #[test]
    fn a_blind_writes_error_reaches_neither_the_plugin_nor_the_audit_line() {
        let access = blind_writer(
            "Secret",
            ReadPolicy::default(),
            Mode::Enforce,
            Server {
                write: Err(QUOTED.to_owned()),
            },
        );
        let (target, operation) = patch("Secret", PatchType::Merge, r#"{"data":{"token":12345}}"#);
        let (answer, log) = logged(access.call(target, operation, None, None));
        let error = answer.unwrap_err();
        assert!(!format!("{error:?}").contains("aHVudGVy"), "{error:?}");
        assert!(!log.contains("aHVudGVy"), "{log}");
        assert!(log.contains(r#""outcome":"invalid""#), "{log}");
        let KubeError::Invalid { causes, message } = error else {
            panic!("still invalid");
        };
        assert!(message.contains("withheld"), "{message}");
        assert_eq!(
            (causes[0].reason.as_str(), causes[0].field.as_str()),
            ("FieldValueInvalid", "patch")
        );
    }

    #[test]
    fn a_blind_write_in_dry_run_reports_the_fields_it_would_change_and_no_value() {
        // An operator who approves every read: a ConfigMap, sensitive to
        // nobody, is unreadable to this plugin.
        let strict = ReadPolicy {
            default_readable: Vec::new(),
            ..ReadPolicy::default()
        };
        let access = blind_writer(
            "ConfigMap",
            strict,
            Mode::DryRun,
            Server { write: Ok(WRITTEN) },
        );
        let (target, operation) = patch("ConfigMap", PatchType::Merge, r#"{"data":{}}"#);
        let (answer, log) = logged(access.call(target, operation, None, None));
        let answer = answer.unwrap();
        assert!(!answer.contains("hunter"), "a receipt: {answer}");
        assert!(!log.contains("hunter"), "{log}");
        assert!(log.contains("would change data.password"), "{log}");
        assert!(log.contains(r#""outcome":"would-succeed""#), "{log}");
    }

    #[test]
    fn a_receipt_keeps_which_object_was_written_and_nothing_of_its_content() {
        let secret = json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "db", "namespace": "team", "uid": "u-1",
                         "resourceVersion": "7", "labels": {"a": "b"},
                         "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{...}"}},
            "data": {"password": "aHVudGVyMg=="}, "type": "Opaque",
        });
        let kept: Value = serde_json::from_str(&receipt(&secret.to_string())).unwrap();
        assert_eq!(
            kept,
            json!({"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": "db", "namespace": "team", "uid": "u-1", "resourceVersion": "7"}})
        );
        assert_eq!(receipt("not json"), "{}");
        assert_eq!(receipt("[1]"), "{}");
    }
}
