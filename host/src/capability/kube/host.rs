//! The `kube` import (0.2.0 and later), on the plugin's [`KubeAccess`].

use super::access::KubeAccess;
use super::request::{DeleteOptions, KubeError, Operation, PatchType, Propagation, Target};
use crate::capability::CallScope;
use crate::gvk::Gvk;
use crate::wit::v0_2::herald::plugin::kube as wit;
use std::sync::Arc;
use wasmtime::component::Linker;

/// What the `kube` import reaches: the plugin's access and the call under
/// way (its deadline, and the memory budget of the answer).
pub struct KubeHost<'a> {
    /// The plugin's way to the API server.
    pub access: &'a Arc<KubeAccess>,
    /// The call under way.
    pub call: CallScope<'a>,
}

/// Links `kube` (0.2.0 and later); `reach`
/// finds what they reach in the store's state.
pub(super) fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    reach: fn(&mut T) -> KubeHost<'_>,
) -> wasmtime::Result<()> {
    wit::add_to_linker::<T, super::Kube>(linker, reach)
}

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

impl KubeHost<'_> {
    /// Makes one call for the plugin; an answer too large for the instance's
    /// memory budget is a memory-limit fault, as for cache look-ups.
    async fn call(&mut self, target: Target, operation: Operation) -> Answer<String> {
        let access = self.access.clone();
        let answer = access
            .call(
                target,
                operation,
                self.call.deadline,
                self.call.cluster.target(),
            )
            .await;
        match answer {
            Ok(object) => {
                self.call.budget.reserve(object.len())?;
                Ok(Ok(object))
            }
            Err(error) => Ok(Err(error.into())),
        }
    }
}

impl wit::Host for KubeHost<'_> {
    async fn get(&mut self, target: wit::Target) -> Answer<String> {
        self.call(target.into(), Operation::Get).await
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
        self.call(target, Operation::Create { body: object }).await
    }

    async fn replace(&mut self, target: wit::Target, object: String) -> Answer<String> {
        self.call(target.into(), Operation::Replace { body: object })
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
        self.call(target.into(), operation).await
    }

    async fn apply(&mut self, target: wit::Target, object: String, force: bool) -> Answer<String> {
        self.call(
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
        let answer = self.call(target.into(), Operation::Delete(options)).await?;
        Ok(answer.map(|_| ()))
    }
}
