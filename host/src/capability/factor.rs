//! The shape every capability has, as Spin's factors: what it is
//! ([`About`]), what it keeps for each plugin and for each instance, what
//! its imports reach during a call, how it links into the engine, where it
//! counts what plugins do ([`Stats`]) and, for one the operator grants, its
//! grant ([`Granted`]). The one list of capabilities, [`capabilities!`] in
//! `capability/mod.rs`, generates from these the per-plugin and
//! per-instance state the runtime stores ([`PluginCapabilities`],
//! [`InstanceCapabilities`]), the linking, the grants and their
//! configuration, the host-wide counters and the trust rule.
//!
//! [`PluginCapabilities`]: super::PluginCapabilities
//! [`InstanceCapabilities`]: super::InstanceCapabilities

use super::call::CallScope;
use super::{ClusterAsks, Setup, View};
use crate::discovery::{GroupResource, KindError, KindResolver};
use prometheus_client::encoding::DescriptorEncoder;
use std::collections::{BTreeMap, BTreeSet};
use wasmtime::component::{HasData, Linker};

/// Where a capability acts: what dry-run, RBAC and replay mean for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acts {
    /// Inside the host only (logs, the cache, its own metrics): nothing to
    /// withhold in dry-run, no RBAC, nothing for replay to record.
    InsideHost,
    /// On the cluster, through the API server: dry-run sends `dryRun=All`,
    /// the daemon's ServiceAccount needs RBAC for it, and replay records
    /// each call and answers it offline.
    OnCluster,
    /// On the network outside the cluster: dry-run sends nothing, no RBAC,
    /// replay records each request and answers it offline.
    OnNetwork,
}

/// What a capability is, for the docs, the checks at load and the tests
/// that keep the docs, RBAC and replay in step with the list.
#[derive(Debug, Clone, Copy)]
pub struct About {
    /// Its name: its folder under `capability/`, and how the docs call it.
    pub name: &'static str,
    /// The WIT interfaces it implements and the world version each first
    /// appeared in: `"kube (0.2.0)"`.
    pub wit: &'static str,
    /// Where it acts.
    pub acts: Acts,
}

/// The RBAC verbs the daemon's ServiceAccount needs on each resource
/// (`plural`, or `plural/status`) for what plugins do on the cluster.
pub type Verbs = BTreeMap<GroupResource, BTreeSet<&'static str>>;

/// One capability: its facts, its state, its host side and its counters.
/// The capability type itself is the [`HasData`] its imports are linked
/// with: `Data<'a>` is what they reach during a call.
pub trait Capability: HasData {
    /// What it is.
    const ABOUT: About;
    /// Its host-wide counters (`()` for a capability that counts nothing).
    type Stats: Stats + Default + std::fmt::Debug + Send + Sync + 'static;
    /// What every instance of one plugin shares, built when the plugin
    /// loads (its logger, its access to the API server, …).
    type Plugin: std::fmt::Debug + Send + Sync + 'static;
    /// What one instance keeps from call to call (`()` for most).
    type Instance: Send + 'static;
    /// Its state for the plugin `setup` describes.
    fn prepare(setup: &Setup<'_>) -> Self::Plugin;
    /// Its state for a new instance of the plugin whose state is `plugin`.
    fn instantiate(plugin: &Self::Plugin) -> Self::Instance;
    /// What its imports reach during `call`, from the plugin's and the
    /// instance's state.
    fn host<'a>(
        plugin: &'a Self::Plugin,
        instance: &'a mut Self::Instance,
        call: CallScope<'a>,
    ) -> Self::Data<'a>;
    /// Adds to `verbs` what the daemon's ServiceAccount needs for what
    /// `asks` declares of this capability: a capability that acts on the
    /// cluster ([`Acts::OnCluster`]) contributes its rules here, from the
    /// `rbac.rs` in its folder; the others add nothing.
    fn rbac(
        asks: &ClusterAsks<'_>,
        resolver: &KindResolver,
        verbs: &mut Verbs,
    ) -> impl Future<Output = Result<(), KindError>> {
        let _ = (asks, resolver, verbs);
        async { Ok(()) }
    }
    /// What `herald plugin replay` adds to the line of an API call this
    /// capability made, given the `kind` the call wrote and the `body` it
    /// sent (Events: what the Event is about), from the `replay.rs` in its
    /// folder; `None` for the calls of others. (The calls themselves are
    /// recorded and answered by the backend they went through: the API
    /// server's, `kube`'s, or the network's, `http`'s.)
    fn replay_about(kind: &str, body: Option<&str>) -> Option<String> {
        let _ = (kind, body);
        None
    }
    /// Links its imports into `linker`, for every world version that has
    /// them; `reach` finds them in the store's state.
    fn add_to_linker<T: View + 'static>(
        linker: &mut Linker<T>,
        reach: fn(&mut T) -> Self::Data<'_>,
    ) -> wasmtime::Result<()>;
}

/// A capability the operator grants per plugin (`plugins.<name>.grants`):
/// denied unless granted, and a plugin declaring it without the grant is
/// not loaded.
pub trait Granted: Capability {
    /// The grant, as the configuration writes it under its key
    /// (`grants.<key>`): nothing granted by default.
    type Grant: std::fmt::Debug
        + Clone
        + Default
        + PartialEq
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static;
    /// What the grant gives, in the words of the trust rule's error
    /// ("Kubernetes writes"): a build carrying it must be known (pinned or
    /// signed).
    const POWER: &'static str;
    /// The name a manifest declares it by in `capabilities` (and the
    /// operator may grant it by in `grants.capabilities`), if any.
    const DECLARED_AS: Option<&'static str>;
    /// The grant its name alone gives in `grants.capabilities`, or why its
    /// own section is needed.
    fn by_name() -> Result<Self::Grant, &'static str>;
    /// True when `grant` grants anything.
    fn is_granted(grant: &Self::Grant) -> bool;
    /// Checks `grant` as configured; the error names the key at fault,
    /// relative to the grant's own (`allowedOrigins`, `[0]`, or `""` for the
    /// grant as a whole), and the problem.
    fn validate(grant: &Self::Grant) -> Result<(), crate::yaml::Invalid>;
    /// Checks what the plugin `declared` against `grant`; the error says
    /// what is missing, without the key (the caller names it).
    fn covers(grant: &Self::Grant, declared: &super::Declared<'_>) -> Result<(), String>;
}

/// Host-wide counters one capability exports on `/metrics`.
pub trait Stats {
    /// Writes its metric families.
    fn encode(&self, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error>;
}

impl Stats for () {
    fn encode(&self, _: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        Ok(())
    }
}

impl<S: Stats> Stats for std::sync::Arc<S> {
    fn encode(&self, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        (**self).encode(encoder)
    }
}

/// The list of capabilities, and everything generated from it. Given, in
/// linking order, the capabilities every plugin has (`field:
/// path::Capability`) and those the operator grants (`field / key: …`,
/// `key` being its grant's key under `plugins.<name>.grants`), each
/// optionally followed by `=> path::View`, a view of the store the runtime
/// implements by hand (only `wasi:http`'s, which shares WASI's resource
/// table), it defines in the invoking module:
///
/// - `PluginCapabilities` and `InstanceCapabilities`, one field per
///   capability holding its [`Capability::Plugin`] and
///   [`Capability::Instance`] state, and `Store`, what the runtime's store
///   state implements to hand them out with the call under way;
/// - `View`, everything the store state implements, and `add_to_linker`,
///   which links every capability, each reaching its own state;
/// - `ABOUT`, each capability's [`About`], in order, and
///   `known_capabilities`, the names a manifest may declare;
/// - `ActionStats`, the host-wide counters, one field per capability;
/// - `Grants` (what one plugin is granted, one typed field per granted
///   capability beside the read grants, mode and rate every plugin has)
///   and `GrantConfig` (the same as configured), with the checks the list
///   implies: validation, the trust rule's powers and the check of a
///   plugin's declarations.
macro_rules! capabilities {
    (
        every_plugin { $($given:ident: $given_ty:ty $(=> $given_view:path)?),* $(,)? }
        granted { $($granted:ident / $key:ident: $granted_ty:ty $(=> $granted_view:path)?),* $(,)? }
    ) => {
        /// What every capability keeps for one plugin, shared by its
        /// instances and rebuilt only when the plugin loads again.
        #[derive(Debug)]
        pub struct PluginCapabilities {
            $(
                #[doc = concat!("The `", stringify!($given), "` capability's.")]
                pub $given: <$given_ty as factor::Capability>::Plugin,
            )*
            $(
                #[doc = concat!("The `", stringify!($granted), "` capability's.")]
                pub $granted: <$granted_ty as factor::Capability>::Plugin,
            )*
        }

        impl PluginCapabilities {
            /// Every capability's state for the plugin `setup` describes.
            pub fn prepare(setup: &Setup<'_>) -> Self {
                PluginCapabilities {
                    $($given: <$given_ty as factor::Capability>::prepare(setup),)*
                    $($granted: <$granted_ty as factor::Capability>::prepare(setup),)*
                }
            }
        }

        /// What every capability keeps for one instance, from call to call.
        pub struct InstanceCapabilities {
            $(
                #[doc = concat!("The `", stringify!($given), "` capability's.")]
                pub $given: <$given_ty as factor::Capability>::Instance,
            )*
            $(
                #[doc = concat!("The `", stringify!($granted), "` capability's.")]
                pub $granted: <$granted_ty as factor::Capability>::Instance,
            )*
        }

        impl InstanceCapabilities {
            /// Every capability's state for a new instance of `plugin`.
            pub fn new(plugin: &PluginCapabilities) -> Self {
                InstanceCapabilities {
                    $($given: <$given_ty as factor::Capability>::instantiate(&plugin.$given),)*
                    $($granted: <$granted_ty as factor::Capability>::instantiate(&plugin.$granted),)*
                }
            }
        }

        /// The capabilities' state in a store, and the call under way.
        pub struct Parts<'a> {
            /// The plugin's.
            pub plugin: &'a PluginCapabilities,
            /// The instance's.
            pub instance: &'a mut InstanceCapabilities,
            /// The call under way.
            pub call: CallScope<'a>,
        }

        /// Implemented by the runtime's store state: where the
        /// capabilities find their state.
        pub trait Store: Send {
            /// The capabilities' state and the call under way.
            fn parts(&mut self) -> Parts<'_>;
        }

        /// Everything the store's state offers the capabilities: their
        /// state, and the views the list names.
        pub trait View: Store $($(+ $given_view)?)* $($(+ $granted_view)?)* {}

        impl<T> View for T where T: Store $($(+ $given_view)?)* $($(+ $granted_view)?)* {}

        /// A capability's own fields of the capabilities' state.
        trait Select: factor::Capability {
            fn select<'a>(
                plugin: &'a PluginCapabilities,
                instance: &'a mut InstanceCapabilities,
            ) -> (&'a Self::Plugin, &'a mut Self::Instance);
        }

        $(
            impl Select for $given_ty {
                fn select<'a>(
                    plugin: &'a PluginCapabilities,
                    instance: &'a mut InstanceCapabilities,
                ) -> (&'a Self::Plugin, &'a mut Self::Instance) {
                    (&plugin.$given, &mut instance.$given)
                }
            }
        )*
        $(
            impl Select for $granted_ty {
                fn select<'a>(
                    plugin: &'a PluginCapabilities,
                    instance: &'a mut InstanceCapabilities,
                ) -> (&'a Self::Plugin, &'a mut Self::Instance) {
                    (&plugin.$granted, &mut instance.$granted)
                }
            }
        )*

        /// What `C`'s imports reach in `store` during the call under way.
        fn reach<T: Store, C: Select>(store: &mut T) -> <C as wasmtime::component::HasData>::Data<'_> {
            let Parts { plugin, instance, call } = store.parts();
            let (plugin, instance) = C::select(plugin, instance);
            C::host(plugin, instance, call)
        }

        /// Links every capability's imports into `linker`, for every world
        /// version.
        pub fn add_to_linker<T: View + 'static>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
            types_to_linker(linker)?;
            $(<$given_ty as factor::Capability>::add_to_linker(linker, reach::<T, $given_ty>)?;)*
            $(<$granted_ty as factor::Capability>::add_to_linker(linker, reach::<T, $granted_ty>)?;)*
            Ok(())
        }

        /// Adds to `verbs` what every capability needs on the cluster for
        /// what `asks` declares (`herald plugin rbac`).
        pub async fn rbac_verbs(
            asks: &ClusterAsks<'_>,
            resolver: &crate::discovery::KindResolver,
            verbs: &mut factor::Verbs,
        ) -> Result<(), crate::discovery::KindError> {
            $(<$given_ty as factor::Capability>::rbac(asks, resolver, verbs).await?;)*
            $(<$granted_ty as factor::Capability>::rbac(asks, resolver, verbs).await?;)*
            Ok(())
        }

        /// What the capability that made an API call writing `kind` with
        /// `body` adds to its replay line, if any.
        pub fn replay_about(kind: &str, body: Option<&str>) -> Option<String> {
            None
                $(.or_else(|| <$given_ty as factor::Capability>::replay_about(kind, body)))*
                $(.or_else(|| <$granted_ty as factor::Capability>::replay_about(kind, body)))*
        }

        /// What each capability is, in linking order.
        pub const ABOUT: &[factor::About] = &[
            $(<$given_ty as factor::Capability>::ABOUT,)*
            $(<$granted_ty as factor::Capability>::ABOUT,)*
        ];

        /// The capabilities a plugin may name in its manifest's
        /// `capabilities` (and the operator in `grants.capabilities`).
        /// Kubernetes writes are declared by write rules instead.
        pub fn known_capabilities() -> Vec<&'static str> {
            [$(<$granted_ty as factor::Granted>::DECLARED_AS),*]
                .into_iter()
                .flatten()
                .collect()
        }

        /// Counters of what every plugin did through its capabilities, each
        /// capability's own.
        #[derive(Debug, Default)]
        pub struct ActionStats {
            $(
                #[doc = concat!("The `", stringify!($given), "` capability's counters.")]
                pub $given: <$given_ty as factor::Capability>::Stats,
            )*
            $(
                #[doc = concat!("The `", stringify!($granted), "` capability's counters.")]
                pub $granted: <$granted_ty as factor::Capability>::Stats,
            )*
            /// Audit lines each plugin caused that its rate limit suppressed.
            pub audit: std::sync::Arc<audit::AuditStats>,
        }

        impl prometheus_client::collector::Collector for ActionStatsCollector {
            fn encode(
                &self,
                mut encoder: prometheus_client::encoding::DescriptorEncoder,
            ) -> Result<(), std::fmt::Error> {
                use factor::Stats as _;
                $(self.0.$given.encode(&mut encoder)?;)*
                $(self.0.$granted.encode(&mut encoder)?;)*
                self.0.audit.encode(&mut encoder)
            }
        }

        /// What the operator granted one plugin.
        #[derive(Debug, Clone, Default, PartialEq)]
        pub struct Grants {
            /// What the plugin may read: the host's policy and `grants.reads`.
            pub reads: reads::Reads,
            $(
                #[doc = concat!("`grants.", stringify!($key), "`: the `", stringify!($granted), "` capability's grant.")]
                pub $key: <$granted_ty as factor::Granted>::Grant,
            )*
            /// Enforce or dry-run.
            pub mode: Mode,
            /// Whether its admission decisions are enforced or audited.
            pub admission: crate::capability::AdmissionMode,
            /// The plugin's API request rate.
            pub rate_limit: rate::RateLimit,
            /// Where it runs (`plugins.<name>.clusters`): the clusters its
            /// subscriptions are delivered from; left out, the default
            /// cluster alone. Not a grant of reads or writes there: those
            /// name their clusters themselves.
            pub clusters: crate::cluster::Clusters,
            /// Grant whatever the manifest declares: for the offline tools
            /// (`herald plugin check` and `replay`), which show what a plugin
            /// would do. Its `http` grants no origin, so every request is
            /// still refused (replay answers them itself).
            pub all_declared: bool,
        }

        impl Grants {
            /// What these grants give that only a known build may carry, in
            /// the trust rule's words.
            pub fn powers(&self) -> Vec<&'static str> {
                let mut powers = Vec::new();
                $(
                    if <$granted_ty as factor::Granted>::is_granted(&self.$key) {
                        powers.push(<$granted_ty as factor::Granted>::POWER);
                    }
                )*
                powers
            }

            /// Checks what `declared` asks of the granted capabilities
            /// against these grants: the message names the first grant
            /// missing and the key to add.
            fn cover(&self, declared: &Declared<'_>) -> Result<(), grants::NotGranted> {
                $(
                    <$granted_ty as factor::Granted>::covers(&self.$key, declared).map_err(
                        |missing| grants::NotGranted::Grant {
                            plugin: declared.plugin.to_owned(),
                            key: stringify!($key),
                            missing,
                        },
                    )?;
                )*
                Ok(())
            }
        }

        /// `plugins.<name>.grants` (and a sidecar's, when
        /// `pluginFiles.sidecarGrants` allows): what a plugin may do beyond
        /// logging and reading the cache. Denied by default; the grant must
        /// cover what the plugin's manifest declares, or the plugin is not
        /// loaded.
        #[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
        #[serde(deny_unknown_fields, rename_all = "camelCase", default)]
        pub struct GrantConfig {
            /// Capabilities granted by name, for those whose grant may be
            /// empty (`events`: the same as an empty `events` section).
            pub capabilities: Vec<String>,
            /// Reads granted beyond the host's default (`reads`): kinds ×
            /// namespaces.
            pub reads: Vec<reads::ReadRule>,
            $(
                #[doc = concat!("The `", stringify!($granted), "` capability's grant.")]
                pub $key: <$granted_ty as factor::Granted>::Grant,
            )*
        }

        impl GrantConfig {
            /// True when nothing is granted.
            pub fn is_empty(&self) -> bool {
                self.capabilities.is_empty()
                    && self.reads.is_empty()
                    $(&& !<$granted_ty as factor::Granted>::is_granted(&self.$key))*
            }

            /// Checks the capabilities named and each grant; the error names
            /// the key at fault, relative to the plugin's entry
            /// (`grants.http.allowedOrigins[0]`).
            pub fn validate(&self) -> Result<(), crate::yaml::Invalid> {
                for capability in &self.capabilities {
                    let named = $(
                        <$granted_ty as factor::Granted>::DECLARED_AS == Some(capability.as_str())
                    )||*;
                    if !named {
                        return Err(crate::yaml::Invalid::new(
                            "grants.capabilities",
                            format!(
                                "{capability:?} is not a capability this host has (it has: {})",
                                known_capabilities().join(", ")
                            ),
                        ));
                    }
                }
                $(
                    if let Some(name) = <$granted_ty as factor::Granted>::DECLARED_AS
                        && self.capabilities.iter().any(|c| c == name)
                        && !<$granted_ty as factor::Granted>::is_granted(&self.$key)
                        && let Err(why) = <$granted_ty as factor::Granted>::by_name()
                    {
                        return Err(crate::yaml::Invalid::new(
                            concat!("grants.", stringify!($key)),
                            format!("is missing: {why}"),
                        ));
                    }
                    <$granted_ty as factor::Granted>::validate(&self.$key)
                        .map_err(|e| e.within(concat!("grants.", stringify!($key))))?;
                )*
                for (index, rule) in self.reads.iter().enumerate() {
                    rule.validate().map_err(|problem| {
                        crate::yaml::Invalid::new(format!("grants.reads[{index}]"), problem)
                    })?;
                }
                Ok(())
            }

            /// The grants these give, under the host's read `policy`, in
            /// `mode` and at `rate_limit`: a capability named in
            /// `capabilities` without its section gets the grant its name
            /// alone gives.
            pub fn grants(
                self,
                policy: reads::ReadPolicy,
                mode: Mode,
                rate_limit: rate::RateLimit,
            ) -> Grants {
                let named = |name: Option<&str>| {
                    name.is_some_and(|name| self.capabilities.iter().any(|c| c == name))
                };
                Grants {
                    $(
                        $key: if !<$granted_ty as factor::Granted>::is_granted(&self.$key)
                            && named(<$granted_ty as factor::Granted>::DECLARED_AS)
                        {
                            <$granted_ty as factor::Granted>::by_name().unwrap_or_default()
                        } else {
                            self.$key.clone()
                        },
                    )*
                    reads: reads::Reads {
                        policy,
                        granted: self.reads.clone(),
                    },
                    mode,
                    // Audited in dry-run, unless the operator's entry says
                    // otherwise (`reload::settings`).
                    admission: if mode.is_dry_run() {
                        crate::capability::AdmissionMode::Audit
                    } else {
                        crate::capability::AdmissionMode::Enforce
                    },
                    rate_limit,
                    clusters: crate::cluster::Clusters::default(),
                    all_declared: false,
                }
            }
        }
    };
}

pub(super) use capabilities;
