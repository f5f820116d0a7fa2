//! What one loaded plugin was given: its declared write rules (each covered
//! by the operator's grant), its granted capabilities, its mode, its rate
//! limit and the way to the cluster; and the path every call takes through
//! them: grant check, rate limit, the request within the deadline, audit;
//! and its outbound HTTP ([`Egress`]).

use super::audit::ActionStats;
use super::grant::{WriteRule, missing_grant, permits};
use super::http::{Egress, HttpGrant, OfflineHttp};
use super::kube::{ApiBackend, ApiRequest, KubeError, Operation, Target};
use super::rate::{RateLimit, TokenBucket};
use serde::Deserialize;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How a plugin's writes are sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// For real.
    #[default]
    Enforce,
    /// With `dryRun=All`: the server validates and admits every write and
    /// persists none; the host logs what would have changed.
    DryRun,
}

/// What the operator granted one plugin.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Grants {
    /// Capabilities, e.g. `events`. `http` is granted by [`Grants::http`].
    pub capabilities: Vec<String>,
    /// Kubernetes API rules.
    pub writes: Vec<WriteRule>,
    /// Enforce or dry-run.
    pub mode: Mode,
    /// The plugin's API request rate.
    pub rate_limit: RateLimit,
    /// Outbound HTTP: the origins and bounds; its presence grants `http`.
    pub http: Option<HttpGrant>,
    /// Grant whatever the manifest declares: for the offline tools (`herald
    /// plugin check` and `replay`), which show what a plugin would do.
    pub all_declared: bool,
}

impl Grants {
    /// Everything the plugin declares, in enforce mode, at the default rate.
    pub fn all_declared() -> Self {
        Grants {
            all_declared: true,
            ..Grants::default()
        }
    }

    /// True when `capability` is granted: listed, or `http` with an HTTP
    /// grant, or anything when [`Grants::all_declared`] (whose `http`
    /// grants no origin, so every request is still refused).
    pub fn grants(&self, capability: &str) -> bool {
        if capability == super::http::CAPABILITY {
            return self.all_declared || self.http.is_some();
        }
        self.all_declared || self.capabilities.iter().any(|c| c == capability)
    }
}

/// How the plugins of one host reach the cluster, and where what they do
/// is counted.
#[derive(Debug, Clone)]
pub struct ClusterAccess {
    /// Where calls go.
    pub api: Arc<dyn ApiBackend>,
    /// Counters for `/metrics`.
    pub stats: Arc<ActionStats>,
    /// Offline tools only (`herald plugin replay`): answers outbound HTTP
    /// in place of the network, for plugins that declare `http` when
    /// [`Grants::all_declared`] ([`Egress::offline`]).
    pub offline_http: Option<Arc<dyn OfflineHttp>>,
}

impl ClusterAccess {
    /// Calls go to `api`, counted in fresh stats.
    pub fn new(api: Arc<dyn ApiBackend>) -> Self {
        ClusterAccess {
            api,
            stats: Arc::default(),
            offline_http: None,
        }
    }
}

/// What one loaded plugin may do, and the state its calls share.
#[derive(Debug)]
pub struct Authority {
    plugin: String,
    rules: Vec<WriteRule>,
    capabilities: BTreeSet<String>,
    mode: Mode,
    access: Option<ClusterAccess>,
    bucket: TokenBucket,
    pub(super) events: super::events::Recorder,
    egress: Arc<Egress>,
}

/// Share of the time left in a handler call that an API request may use:
/// the rest is the handler's, to act on the answer (or the timeout).
const REQUEST_SHARE: f64 = 0.8;

impl Authority {
    /// The authority of a plugin that declared `rules` and `capabilities`,
    /// if `grants` cover them: otherwise the message naming what is missing.
    pub fn grant(
        plugin: &str,
        rules: &[WriteRule],
        capabilities: &[String],
        grants: &Grants,
        access: Option<ClusterAccess>,
    ) -> Result<Self, String> {
        for capability in capabilities {
            if !grants.grants(capability) {
                let key = if capability == super::http::CAPABILITY {
                    format!("plugins.{plugin}.grants.http")
                } else {
                    format!("plugins.{plugin}.grants")
                };
                return Err(format!(
                    "plugin {plugin:?} requests capability {capability:?}, which the operator has \
                     not granted ({key})"
                ));
            }
        }
        if let Some(missing) = missing_grant(rules, &grants.writes).filter(|_| !grants.all_declared)
        {
            return Err(format!(
                "plugin {plugin:?} declares writes the operator has not granted: {missing} \
                 (plugins.{plugin}.grants.writes)"
            ));
        }
        // Outbound HTTP needs both the manifest's declaration and the grant.
        let http = grants
            .http
            .clone()
            .filter(|_| capabilities.iter().any(|c| c == super::http::CAPABILITY));
        let http_stats = access
            .as_ref()
            .map(|access| access.stats.http.clone())
            .unwrap_or_default();
        let declares_http = capabilities.iter().any(|c| c == super::http::CAPABILITY);
        let offline = access
            .as_ref()
            .and_then(|access| access.offline_http.clone())
            .filter(|_| grants.all_declared && declares_http);
        let egress = match offline {
            Some(answerer) => Egress::offline(plugin, answerer),
            None => Egress::new(plugin, http, http_stats),
        };
        Ok(Authority {
            egress: Arc::new(egress),
            plugin: plugin.to_owned(),
            rules: rules.to_vec(),
            capabilities: capabilities.iter().cloned().collect(),
            mode: grants.mode,
            access,
            bucket: TokenBucket::new(grants.rate_limit),
            events: super::events::Recorder::default(),
        })
    }

    /// An authority that grants nothing (a plugin asking for nothing).
    pub fn none(plugin: &str) -> Self {
        Self::grant(plugin, &[], &[], &Grants::default(), None)
            .expect("asking for nothing needs no grant")
    }

    /// The plugin's name.
    pub fn plugin(&self) -> &str {
        &self.plugin
    }

    /// Its mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Its declared (and granted) write rules.
    pub fn rules(&self) -> &[WriteRule] {
        &self.rules
    }

    /// True when it was granted `capability`.
    pub fn has(&self, capability: &str) -> bool {
        self.capabilities.contains(capability)
    }

    /// Its outbound HTTP: the policy its instances' `wasi:http` hooks
    /// enforce ([`Egress::hooks`]). Refuses every request unless the plugin
    /// declared `http` and the operator granted origins.
    pub fn egress(&self) -> &Arc<Egress> {
        &self.egress
    }

    /// The field manager of its writes.
    pub fn field_manager(&self) -> String {
        format!("herald.{}", self.plugin)
    }

    pub(super) fn stats(&self) -> Option<&ActionStats> {
        self.access.as_ref().map(|access| &*access.stats)
    }

    /// One `kube` call: checked against the rules, rate-limited, sent within
    /// `deadline` (the handler call's), audited. The answer is JSON text.
    pub async fn call(
        &self,
        target: Target,
        operation: Operation,
        deadline: Option<Instant>,
    ) -> Result<String, KubeError> {
        let request = ApiRequest {
            target,
            operation,
            dry_run: self.mode == Mode::DryRun,
            field_manager: self.field_manager(),
        };
        if !permits(&self.rules, &request.access()) {
            let error = KubeError::NotGranted(format!(
                "plugin {:?} has no write rule for {}: declare it in the manifest and have the \
                 operator grant it",
                self.plugin,
                request.access()
            ));
            self.audit(&request, &Err(error.clone()), None);
            return Err(error);
        }
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
        let answer = answer.map_err(|(error, _)| error);
        if request.dry_run
            && let Ok(after) = &answer
        {
            super::kube::log_shadow(&self.plugin, &request, before.as_deref(), after);
        }
        self.audit(&request, &answer, latency);
        answer
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
    pub(super) async fn send(
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
        let budget = deadline
            .map(|d| d.saturating_duration_since(now).mul_f64(REQUEST_SHARE))
            .unwrap_or(Duration::from_secs(30));
        match self.bucket.reserve(now, budget) {
            Err(too_long) => {
                access.stats.refused(&self.plugin);
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
                access.stats.waited(&self.plugin, wait);
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

    fn audit(
        &self,
        request: &ApiRequest,
        answer: &Result<String, KubeError>,
        latency: Option<Duration>,
    ) {
        let (outcome, detail) = match answer {
            Ok(_) => ("ok", String::new()),
            Err(error) => (error.outcome(), error.to_string()),
        };
        match self.stats() {
            Some(stats) => stats.record(&self.plugin, request, outcome, latency, &detail),
            None => ActionStats::default().record(&self.plugin, request, outcome, latency, &detail),
        }
    }
}
