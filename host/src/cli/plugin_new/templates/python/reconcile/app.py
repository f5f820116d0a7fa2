"""{{name}}: a Herald controller written with the reconcile API. It keeps a
ConfigMap ``<deployment>-summary`` beside every Deployment, with its images
and replicas, owned by the Deployment (so Kubernetes deletes it with it),
and puts it back when someone changes or deletes it."""

import herald_sdk
from herald_sdk import Manifest, Verb, WriteRule, kube, log
from herald_sdk.kinds import ConfigMap, Deployment
from herald_sdk.reconcile import Action, Controller, Reconciler


class Plugin(Reconciler):
    """Keeps every Deployment's summary."""

    @classmethod
    def controller(cls) -> Controller:
        manifest = Manifest("{{name}}", "0.1.0").write(
            WriteRule.to(ConfigMap).verbs(Verb.APPLY).all_namespaces())
        # For Deployments; a change to a ConfigMap a Deployment controls (its
        # summary) reconciles that Deployment.
        return Controller(Deployment, manifest).owns(ConfigMap)

    def reconcile(self, request, deployment):
        if deployment is None:
            # Gone: Kubernetes deletes the summary it owned.
            log.info(f"gone deployment={request}")
            return Action.await_change()
        images = ",".join(deployment.images)
        replicas = deployment.spec.get("replicas", 1)
        name = f"{request.name}-summary"
        kube.Api(ConfigMap, namespace=request.namespace).apply(name, {
            "metadata": {"ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "Deployment", "name": request.name,
                "uid": deployment.uid, "controller": True, "blockOwnerDeletion": True,
            }]},
            "data": {"images": images, "replicas": str(replicas)},
        }, force=True)
        log.info(f"summarized deployment={request} images={images} replicas={replicas}")
        # Level-based: look again in ten minutes even if nothing changes.
        return Action.requeue_after(600)


herald_sdk.export_plugin(Plugin)
