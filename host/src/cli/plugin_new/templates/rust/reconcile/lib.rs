//! `{{name}}`: a Herald controller written with the SDK's reconcile API. It
//! keeps a ConfigMap `<deployment>-summary` beside every Deployment, with
//! its images and replicas, owned by the Deployment (so Kubernetes deletes
//! it with it), and puts it back when someone changes or deletes it.

use herald_sdk::k8s_openapi::api::apps::v1::Deployment;
use herald_sdk::k8s_openapi::api::core::v1::ConfigMap;
use herald_sdk::kube::Api;
use herald_sdk::reconcile::{Action, Controller, Reconciler, Request};
use herald_sdk::serde_json::json;
use herald_sdk::{Error, Manifest, Verb, WriteRule};
use std::time::Duration;

/// The controller: no state of its own.
#[derive(Default)]
pub struct Plugin;

impl Reconciler for Plugin {
    type Object = Deployment;

    fn controller() -> Controller {
        let manifest = Manifest::new("{{name}}", env!("CARGO_PKG_VERSION"))
            .write(WriteRule::new::<ConfigMap>().verbs([Verb::Apply]).namespaces(["*"]));
        // For Deployments; a change to a ConfigMap a Deployment controls
        // (its summary) reconciles that Deployment.
        Controller::new::<Deployment>(manifest).owns::<ConfigMap>()
    }

    fn reconcile(&mut self, request: &Request, deployment: Option<Deployment>) -> Result<Action, Error> {
        let Some(deployment) = deployment else {
            // Gone: Kubernetes deletes the summary it owned.
            herald_sdk::info!("gone deployment={request}");
            return Ok(Action::await_change());
        };
        let spec = deployment.spec;
        let images: Vec<String> = spec
            .template
            .spec
            .map(|pod| pod.containers.into_iter().filter_map(|c| c.image).collect())
            .unwrap_or_default();
        let replicas = spec.replicas.unwrap_or(1);
        let name = format!("{}-summary", request.name);
        let summary = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "ownerReferences": [{
                    "apiVersion": "apps/v1", "kind": "Deployment", "name": request.name,
                    "uid": deployment.metadata.uid, "controller": true, "blockOwnerDeletion": true,
                }],
            },
            "data": {"images": images.join(","), "replicas": replicas.to_string()},
        });
        Api::<ConfigMap>::namespaced(request.namespace.as_deref().unwrap_or_default())
            .apply(&name, &summary, true)?;
        herald_sdk::info!(
            "summarized deployment={request} images={} replicas={replicas}",
            images.join(",")
        );
        // Level-based: look again in ten minutes even if nothing changes.
        Ok(Action::requeue_after(Duration::from_secs(600)))
    }
}

herald_sdk::export_reconciler!(Plugin);

#[cfg(test)]
mod tests {
    use super::*;
    use herald_sdk::Handler;
    use herald_sdk::reconcile::Reconcile;
    use herald_sdk::testing;

    fn deployment(image: &str) -> Deployment {
        herald_sdk::serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "shop", "uid": "uid-web"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"spec": {"containers": [{"name": "app", "image": image}]}},
            },
        }))
        .unwrap()
    }

    #[test]
    fn keeps_an_owned_summary_and_looks_again_later() {
        testing::reset();
        testing::declare(&Reconcile::<Plugin>::manifest());
        let mut plugin = Reconcile::<Plugin>::default();
        testing::cache_insert(&deployment("nginx:1.28"));
        // The notification may be older than the cache: the cache's state wins.
        plugin.on_add(&testing::added(&deployment("nginx:1.27"))).unwrap();
        let writes = testing::take_writes();
        assert_eq!(writes.len(), 1, "{writes:?}");
        let body = writes[0].body.as_ref().unwrap();
        assert_eq!(body["metadata"]["name"], "web-summary");
        assert_eq!(body["metadata"]["ownerReferences"][0]["uid"], "uid-web");
        assert_eq!(body["data"]["images"], "nginx:1.28");
        assert_eq!(testing::take_requeues(), [Duration::from_secs(600)]);
        assert_eq!(
            testing::take_messages(),
            ["summarized deployment=shop/web images=nginx:1.28 replicas=2"]
        );

        testing::reset();
        testing::declare(&Reconcile::<Plugin>::manifest());
        plugin.on_delete(&testing::deleted(&deployment("nginx:1.28"))).unwrap();
        assert!(testing::take_writes().is_empty());
        assert_eq!(testing::take_messages(), ["gone deployment=shop/web"]);
    }
}
