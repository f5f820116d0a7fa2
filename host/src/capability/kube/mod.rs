//! The `kube` capability: plugins read objects from the API server and
//! create, replace, patch, server-side apply and delete them (or their
//! status), within their declared and granted write rules.
//!
//! The WIT import's host side is here; the path a call takes (grant check,
//! rate limit, deadline, audit) is [`Authority::call`](super::Authority::call);
//! where it goes is an [`ApiBackend`]: the cluster ([`ClusterApi`]) or the
//! script of an offline replay.

mod cluster;
mod request;
mod shadow;

pub use cluster::{ClusterApi, classify, writer_config};
pub use request::{
    ApiBackend, ApiRequest, Cause, DeleteOptions, KubeError, Operation, PatchType, Propagation,
    Target,
};
pub use shadow::{changes, log_shadow};

use crate::gvk::Gvk;
use crate::plugin::bindings::v0_2::herald::plugin::kube as wit;
use crate::plugin::host::HostState;

impl From<wit::Target> for Target {
    fn from(target: wit::Target) -> Self {
        Target {
            gvk: Gvk::new(target.kind.group, target.kind.version, target.kind.kind),
            namespace: target.namespace,
            name: target.name,
            subresource: target.subresource,
        }
    }
}

impl From<KubeError> for wit::KubeError {
    fn from(error: KubeError) -> Self {
        match error {
            KubeError::NotGranted(m) => wit::KubeError::NotGranted(m),
            KubeError::NotFound(m) => wit::KubeError::NotFound(m),
            KubeError::AlreadyExists(m) => wit::KubeError::AlreadyExists(m),
            KubeError::Conflict(m) => wit::KubeError::Conflict(m),
            KubeError::Invalid { message, causes } => wit::KubeError::Invalid(wit::InvalidError {
                message,
                causes: causes
                    .into_iter()
                    .map(|c| wit::Cause {
                        reason: c.reason,
                        message: c.message,
                        field: c.field,
                    })
                    .collect(),
            }),
            KubeError::Forbidden(m) => wit::KubeError::Forbidden(m),
            KubeError::TooManyRequests {
                message,
                retry_after,
            } => wit::KubeError::TooManyRequests(wit::Throttled {
                message,
                retry_after_ms: retry_after.map(|d| d.as_millis() as u64),
            }),
            KubeError::Timeout(m) => wit::KubeError::Timeout(m),
            KubeError::Unavailable(m) => wit::KubeError::Unavailable(m),
            KubeError::Failed {
                code,
                reason,
                message,
            } => wit::KubeError::Failed(wit::ApiStatus {
                code,
                reason,
                message,
            }),
        }
    }
}

type Answer<T> = wasmtime::Result<Result<T, wit::KubeError>>;

impl HostState {
    /// Makes one call for the plugin; an answer too large for the instance's
    /// memory budget is a memory-limit fault, as for cache look-ups.
    async fn kube_call(&mut self, target: Target, operation: Operation) -> Answer<String> {
        let authority = self.authority().clone();
        let answer = authority.call(target, operation, self.deadline).await;
        match answer {
            Ok(object) => {
                self.limiter.reserve_answer(object.len())?;
                Ok(Ok(object))
            }
            Err(error) => Ok(Err(error.into())),
        }
    }
}

impl wit::Host for HostState {
    async fn get(&mut self, target: wit::Target) -> Answer<String> {
        self.kube_call(target.into(), Operation::Get).await
    }

    async fn create(
        &mut self,
        kind: wit::GroupVersionKind,
        namespace: Option<String>,
        object: String,
    ) -> Answer<String> {
        let name = serde_json::from_str::<serde_json::Value>(&object)
            .ok()
            .and_then(|o| o["metadata"]["name"].as_str().map(str::to_owned))
            .unwrap_or_default();
        let target = Target {
            gvk: Gvk::new(kind.group, kind.version, kind.kind),
            namespace,
            name,
            subresource: None,
        };
        self.kube_call(target, Operation::Create { body: object })
            .await
    }

    async fn replace(&mut self, target: wit::Target, object: String) -> Answer<String> {
        self.kube_call(target.into(), Operation::Replace { body: object })
            .await
    }

    async fn patch(
        &mut self,
        target: wit::Target,
        patch_type: wit::PatchType,
        patch: String,
    ) -> Answer<String> {
        let patch_type = match patch_type {
            wit::PatchType::Merge => PatchType::Merge,
            wit::PatchType::Json => PatchType::Json,
            wit::PatchType::Strategic => PatchType::Strategic,
        };
        let operation = Operation::Patch {
            patch_type,
            body: patch,
        };
        self.kube_call(target.into(), operation).await
    }

    async fn apply(&mut self, target: wit::Target, object: String, force: bool) -> Answer<String> {
        self.kube_call(
            target.into(),
            Operation::Apply {
                body: object,
                force,
            },
        )
        .await
    }

    async fn delete(&mut self, target: wit::Target, options: wit::DeleteOptions) -> Answer<()> {
        let options = DeleteOptions {
            uid: options.uid,
            resource_version: options.resource_version,
            propagation: options.propagation.map(|p| match p {
                wit::Propagation::Orphan => Propagation::Orphan,
                wit::Propagation::Background => Propagation::Background,
                wit::Propagation::Foreground => Propagation::Foreground,
            }),
        };
        let answer = self
            .kube_call(target.into(), Operation::Delete(options))
            .await?;
        Ok(answer.map(|_| ()))
    }
}
