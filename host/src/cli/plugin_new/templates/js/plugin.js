// @ts-check
/** {{name}}: a Herald plugin that logs Pods being added, changing phase and being deleted. */

import { Handler, Manifest, Subscription, kinds, log } from '@herald/sdk';

/**
 * A Pod's `status.phase`, or `none` before the API server sets one.
 *
 * @param {any} pod
 * @returns {string}
 */
export function phase(pod) {
  return pod?.status?.phase ?? 'none';
}

/** Logs the life of every Pod. */
export default class Plugin extends Handler {
  manifest() {
    return new Manifest('{{name}}', '0.1.0').subscribe(Subscription.to(kinds.Pod));
  }

  onAdd(event) {
    const verb = event.isInitialList ? 'listed' : 'added';
    log.info(`${verb} pod=${event.key} phase=${phase(event.object)}`);
  }

  onUpdate(update) {
    const [from, to] = [phase(update.old), phase(update.new)];
    if (from !== to) {
      log.info(`phase pod=${update.key} from=${from} to=${to}`);
    }
  }

  onDelete(event) {
    log.info(`deleted pod=${event.key}`);
  }
}
