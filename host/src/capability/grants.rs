//! What a plugin declares, and its authorization when it loads: its
//! declarations are checked against what the operator granted (the
//! [`Grants`] the capability list generates) and, if covered, the plugin
//! is [`Authorized`]: what each capability that acts outside the host
//! builds the plugin's access from (`Capability::prepare`). A plugin that
//! declares more than it was granted is not loaded, and the error names
//! the grant to add.

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

/// Why a plugin is not loaded: it declares what the operator did not
/// grant it. The message names the plugin and the grant to add.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotGranted {
    /// It reads (subscribes to) a kind its read grants do not cover.
    #[error("{refusal}")]
    Read {
        /// The plugin.
        plugin: String,
        /// The kind it may not read.
        kind: String,
        /// Why, and the grant that would cover it.
        refusal: String,
    },
    /// It declares more of a granted capability than its grant covers.
    #[error("plugin {plugin:?} {missing} (plugins.{plugin}.grants.{key})")]
    Grant {
        /// The plugin.
        plugin: String,
        /// The grant's key under `plugins.<name>.grants`.
        key: &'static str,
        /// What the grant is missing.
        missing: String,
    },
}

/// A plugin whose declarations its grants cover: what the capabilities
/// that act outside the host build its access from.
#[derive(Debug)]
pub struct Authorized {
    /// The plugin's name.
    pub plugin: String,
    /// What the operator granted it.
    pub grants: Grants,
    /// The capabilities it declares and may use (none for calls that must
    /// have no side effects).
    pub capabilities: Vec<String>,
    /// How the plugins of this host reach the world outside it; `None`
    /// offline.
    pub access: Option<ClusterAccess>,
    /// Its audit log.
    pub audit: Arc<AuditLog>,
    /// Its way to the API server, which `kube` and `events` share (one
    /// rate limit, one mode, one audit).
    pub api: Arc<KubeAccess>,
}

impl Authorized {
    /// True when the plugin declares `capability` and may use it.
    pub fn declares(&self, capability: &str) -> bool {
        self.capabilities.iter().any(|c| c == capability)
    }

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
    ) -> Result<Authorized, NotGranted> {
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
    ) -> Result<Authorized, NotGranted> {
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
    ) -> Result<Authorized, NotGranted> {
        let plugin = declared.plugin;
        if !self.all_declared
            && let Some(read) = declared
                .reads
                .iter()
                .find(|r| self.reads.allows(r).is_none())
        {
            return Err(NotGranted::Read {
                plugin: plugin.to_owned(),
                kind: read.kind.to_owned(),
                refusal: self.reads.refusal(plugin, read),
            });
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
                        clusters: crate::cluster::Clusters(
                            [crate::cluster::ALL_CLUSTERS.to_owned()].into(),
                        ),
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
        let kube = if self.all_declared {
            kube
        } else {
            kube.within_grants(self.writes.clone())
        };
        let api = Arc::new(match writes_refused {
            Some(why) => kube.refusing_writes(why),
            None => kube,
        });
        Ok(Authorized {
            plugin: plugin.to_owned(),
            grants: self.clone(),
            capabilities: declared.capabilities.to_vec(),
            access,
            audit,
            api,
        })
    }
}
