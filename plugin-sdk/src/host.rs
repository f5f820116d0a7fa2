//! The host's imports as the rest of the SDK calls them: the real imports on
//! wasm, the in-process test host ([`crate::testing`]) everywhere else.

#[cfg(target_arch = "wasm32")]
pub(crate) use wasm::*;

#[cfg(not(target_arch = "wasm32"))]
pub(crate) use crate::testing::host::*;

#[cfg(target_arch = "wasm32")]
mod wasm {
    use crate::GroupVersionKind;
    use crate::bindings::herald::plugin0_2_0::{cache, config, events, kube, log};
    use crate::bindings::herald::plugin0_3_0::{index, metrics, workqueue};
    use crate::cache::CacheError;
    use crate::events::EventRecord;
    use crate::kube::{DeleteParams, KubeError, PatchType, Target};
    use crate::log::Level;
    use crate::metrics::MetricOp;

    pub(crate) use crate::http::wasi::send as http_send;

    pub(crate) fn log(level: Level, message: &str) {
        let level = match level {
            Level::Trace => log::Level::Trace,
            Level::Debug => log::Level::Debug,
            Level::Info => log::Level::Info,
            Level::Warn => log::Level::Warn,
            Level::Error => log::Level::Error,
        };
        log::log(level, message);
    }

    pub(crate) fn cache_get(
        kind: &GroupVersionKind,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<String>, CacheError> {
        cache::get(&kind.to_wit(), namespace, name).map_err(CacheError::from_wit)
    }

    pub(crate) fn cache_list(
        kind: &GroupVersionKind,
        namespace: Option<&str>,
        label_selector: Option<&str>,
    ) -> Result<Vec<String>, CacheError> {
        cache::list(&kind.to_wit(), namespace, label_selector).map_err(CacheError::from_wit)
    }

    pub(crate) fn cache_by_index(
        name: &str,
        value: &str,
        namespace: Option<&str>,
    ) -> Result<Vec<String>, CacheError> {
        index::lookup(name, value, namespace).map_err(|error| match error {
            index::IndexError::UnknownIndex(name) => CacheError::UnknownIndex(name),
        })
    }

    pub(crate) fn config() -> Option<String> {
        config::get()
    }

    pub(crate) fn kube_get(target: &Target) -> Result<String, KubeError> {
        kube::get(&target.to_wit()).map_err(KubeError::from_wit)
    }

    pub(crate) fn kube_create(
        kind: &GroupVersionKind,
        namespace: Option<&str>,
        object: &str,
    ) -> Result<String, KubeError> {
        kube::create(&kind.to_wit(), namespace, object).map_err(KubeError::from_wit)
    }

    pub(crate) fn kube_replace(target: &Target, object: &str) -> Result<String, KubeError> {
        kube::replace(&target.to_wit(), object).map_err(KubeError::from_wit)
    }

    pub(crate) fn kube_patch(
        target: &Target,
        patch_type: PatchType,
        patch: &str,
    ) -> Result<String, KubeError> {
        kube::patch(&target.to_wit(), patch_type.to_wit(), patch).map_err(KubeError::from_wit)
    }

    pub(crate) fn kube_apply(
        target: &Target,
        object: &str,
        force: bool,
    ) -> Result<String, KubeError> {
        kube::apply(&target.to_wit(), object, force).map_err(KubeError::from_wit)
    }

    pub(crate) fn kube_delete(target: &Target, params: &DeleteParams) -> Result<(), KubeError> {
        let options = kube::DeleteOptions {
            uid: params.uid.clone(),
            resource_version: params.resource_version.clone(),
            propagation: params.propagation.map(|propagation| propagation.to_wit()),
        };
        kube::delete(&target.to_wit(), &options).map_err(KubeError::from_wit)
    }

    pub(crate) fn events_publish(event: &EventRecord) -> Result<(), KubeError> {
        events::publish(&event.to_wit()).map_err(KubeError::from_wit)
    }

    pub(crate) fn metric_update(op: MetricOp, name: &str, label_values: &[&str], value: f64) {
        // Without labels nothing is allocated; with labels the host wants
        // owned strings.
        let owned: Vec<String>;
        let label_values: &[String] = if label_values.is_empty() {
            &[]
        } else {
            owned = label_values
                .iter()
                .map(|value| (*value).to_owned())
                .collect();
            &owned
        };
        match op {
            MetricOp::Add => metrics::add(name, label_values, value),
            MetricOp::Set => metrics::set(name, label_values, value),
            MetricOp::Observe => metrics::observe(name, label_values, value),
        }
    }

    pub(crate) fn requeue_after(delay_ms: u64) {
        workqueue::requeue_after(delay_ms);
    }

    pub(crate) fn deadline_remaining_ms() -> u64 {
        crate::bindings::herald::plugin0_4_0::deadline::remaining_ms()
    }

    pub(crate) fn cluster_current() -> String {
        crate::bindings::herald::plugin0_6_0::cluster::current()
    }

    pub(crate) fn cluster_names() -> Vec<String> {
        crate::bindings::herald::plugin0_6_0::cluster::names()
    }

    pub(crate) fn cluster_target(name: Option<&str>) -> Result<(), String> {
        crate::bindings::herald::plugin0_6_0::cluster::target(name)
    }
}
