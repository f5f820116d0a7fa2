//! What a plugin declares, and its authorization when it loads: its
//! declarations are checked against what the operator granted (the
//! [`Grants`] the capability list generates) and, if covered, each
//! capability that acts outside the host gets the plugin's access. A
//! plugin that declares more than it was granted is not loaded, and the
//! error names the grant to add.

use super::events::{EventsAccess, EventsGrant};
use super::http::Egress;
use super::kube::{KubeAccess, WriteRule};
use super::reads::{Read, Reads};
use super::{AuditLog, ClusterAccess, Grants};
use std::sync::Arc;

/// What a plugin declares it needs beyond what every plugin has.
#[derive(Debug, Clone, Copy)]
pub struct Declared<'a> {
    /// The plugin's name.
    pub plugin: &'a str,
    /// Its manifest's `capabilities`: `events`, `http`.
    pub capabilities: &'a [String],
    /// Its manifest's write rules.
    pub writes: &'a [WriteRule],
    /// What its subscriptions read: kind and namespace.
    pub reads: &'a [Read<'a>],
}

impl Declared<'_> {
    /// True when the plugin's manifest names `capability`.
    pub fn declares(&self, capability: &str) -> bool {
        self.capabilities.iter().any(|c| c == capability)
    }
}

/// What one plugin may do through the capabilities that act outside the
/// host, each ready for its instances.
#[derive(Debug)]
pub struct Authorized {
    /// Its Kubernetes API calls.
    pub kube: Arc<KubeAccess>,
    /// Its Events.
    pub events: Arc<EventsAccess>,
    /// Its outbound HTTP.
    pub http: Arc<Egress>,
}

impl Authorized {
    /// Nothing granted: a plugin asking for nothing, or one not yet known
    /// (while its manifest is read).
    pub fn none(plugin: &str) -> Self {
        Grants::default()
            .authorize(
                Declared {
                    plugin,
                    capabilities: &[],
                    writes: &[],
                    reads: &[],
                },
                None,
                Arc::new(AuditLog::new(plugin, Default::default(), None)),
            )
            .expect("asking for nothing needs no grant")
    }
}

impl Grants {
    /// Everything the plugin declares, in enforce mode, at the default rate.
    pub fn all_declared() -> Self {
        Grants {
            all_declared: true,
            ..Grants::default()
        }
    }

    /// Checks `declared` against these grants and, if they cover it, gives
    /// the plugin its access through `access` (`None`: offline); otherwise
    /// the message naming the first grant missing.
    pub fn authorize(
        &self,
        declared: Declared<'_>,
        access: Option<ClusterAccess>,
        audit: Arc<AuditLog>,
    ) -> Result<Authorized, String> {
        self.authorize_with(declared, access, audit, None)
    }

    /// The access of calls that must have no side effects (admission): what
    /// `declared` reads and `get`s as [`Self::authorize`] gives it, every
    /// `kube` write refused saying `why`, no Events and no HTTP.
    pub fn authorize_reads_only(
        &self,
        declared: Declared<'_>,
        access: Option<ClusterAccess>,
        audit: Arc<AuditLog>,
        why: &'static str,
    ) -> Result<Authorized, String> {
        let reads_only = Declared {
            capabilities: &[],
            ..declared
        };
        self.authorize_with(reads_only, access, audit, Some(why))
    }

    fn authorize_with(
        &self,
        declared: Declared<'_>,
        access: Option<ClusterAccess>,
        audit: Arc<AuditLog>,
        writes_refused: Option<&'static str>,
    ) -> Result<Authorized, String> {
        let plugin = declared.plugin;
        if !self.all_declared
            && let Some(read) = declared
                .reads
                .iter()
                .find(|r| self.reads.allows(r).is_none())
        {
            return Err(self.reads.refusal(plugin, read));
        }
        if !self.all_declared {
            self.cover(&declared)?;
        }
        let kube = KubeAccess::new(
            plugin,
            declared.writes.to_vec(),
            if self.all_declared {
                Reads {
                    granted: vec![crate::capability::reads::ReadRule {
                        group: "*".into(),
                        kind: "*".into(),
                        namespaces: [crate::capability::kube::ALL_NAMESPACES.to_owned()].into(),
                    }],
                    ..self.reads.clone()
                }
            } else {
                self.reads.clone()
            },
            self.mode,
            self.rate_limit,
            access.clone(),
            audit.clone(),
        );
        let kube = Arc::new(match writes_refused {
            Some(why) => kube.refusing_writes(why),
            None => kube,
        });
        let events = if !declared.declares(super::events::CAPABILITY) {
            None
        } else if self.all_declared {
            Some(EventsGrant {
                namespaces: [super::kube::ALL_NAMESPACES.to_owned()].into(),
            })
        } else {
            self.events.clone()
        };
        let events = Arc::new(EventsAccess::new(events, kube.clone()));
        // Outbound HTTP needs both the manifest's declaration and the grant.
        let declares_http = declared.declares(super::http::CAPABILITY);
        let offline = access
            .as_ref()
            .and_then(|access| access.offline_http.clone())
            .filter(|_| self.all_declared && declares_http);
        let http = match offline {
            Some(answerer) => Egress::offline(plugin, answerer),
            None => Egress::new(
                plugin,
                self.http.clone().filter(|_| declares_http),
                access
                    .as_ref()
                    .map(|access| access.stats.http.clone())
                    .unwrap_or_default(),
            )
            .with_audit(audit),
        };
        Ok(Authorized {
            kube,
            events,
            http: Arc::new(http.in_mode(self.mode)),
        })
    }
}
