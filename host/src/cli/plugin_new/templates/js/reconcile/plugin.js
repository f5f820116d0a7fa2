// @ts-check
/**
 * {{name}}: a Herald controller written with the reconcile API. It keeps a
 * ConfigMap `<deployment>-summary` beside every Deployment, with its images
 * and replicas, owned by the Deployment (so Kubernetes deletes it with it),
 * and puts it back when someone changes or deletes it.
 */

import { Action, Controller, Manifest, Reconciler, Verb, WriteRule, kinds, kube, log } from '@herald/sdk';

/** Keeps every Deployment's summary. */
export default class Plugin extends Reconciler {
  controller() {
    const manifest = new Manifest('{{name}}', '0.1.0').write(
      WriteRule.to(kinds.ConfigMap).verbs(Verb.Apply).allNamespaces(),
    );
    // For Deployments; a change to a ConfigMap a Deployment controls (its
    // summary) reconciles that Deployment.
    return new Controller(kinds.Deployment, manifest).owns(kinds.ConfigMap);
  }

  /**
   * @param {import('@herald/sdk').Request} request
   * @param {any} deployment The cache's current state; `undefined` when gone.
   */
  reconcile(request, deployment) {
    if (deployment === undefined) {
      // Gone: Kubernetes deletes the summary it owned.
      log.info(`gone deployment=${request}`);
      return Action.awaitChange();
    }
    const containers = deployment.spec?.template?.spec?.containers ?? [];
    const images = containers.map((/** @type {any} */ c) => c.image).join(',');
    const replicas = deployment.spec?.replicas ?? 1;
    const name = `${request.name}-summary`;
    new kube.Api(kinds.ConfigMap, { namespace: request.namespace }).apply(
      name,
      {
        metadata: {
          ownerReferences: [
            {
              apiVersion: 'apps/v1',
              kind: 'Deployment',
              name: request.name,
              uid: deployment.metadata.uid,
              controller: true,
              blockOwnerDeletion: true,
            },
          ],
        },
        data: { images, replicas: String(replicas) },
      },
      { force: true },
    );
    log.info(`summarized deployment=${request} images=${images} replicas=${replicas}`);
    // Level-based: look again in ten minutes even if nothing changes.
    return Action.requeueAfter(600_000);
  }
}
