// @ts-check
/** {{name}}: a Herald admission plugin that refuses Pods whose images are not pinned (no tag, or `:latest`). */

import { AdmissionRule, Handler, Manifest, Verdict, Webhook, kinds } from '@herald/sdk';

/**
 * Whether `image` names a tag other than `latest`, or a digest.
 *
 * @param {string} image
 * @returns {boolean}
 */
export function pinned(image) {
  if (image.includes('@')) {
    return true;
  }
  // The tag follows the last ':' after the last '/' (a registry's port is not a tag).
  const last = image.slice(image.lastIndexOf('/') + 1);
  const colon = last.lastIndexOf(':');
  return colon !== -1 && last.slice(colon + 1) !== 'latest';
}

/** Validates Pods as they are created or updated. */
export default class Plugin extends Handler {
  manifest() {
    return new Manifest('{{name}}', '0.1.0').validating(new Webhook().rule(AdmissionRule.to(kinds.Pod).create().update()));
  }

  /** @param {import('@herald/sdk').AdmissionReview<import('@herald/sdk').Pod>} review */
  validate(review) {
    const spec = review.object.spec;
    const images = [...(spec?.initContainers ?? []), ...(spec?.containers ?? [])].map((container) => container.image ?? '');
    const unpinned = images.filter((image) => !pinned(image));
    if (unpinned.length > 0) {
      return Verdict.deny(`images must be pinned to a tag or digest, not latest: ${unpinned.join(', ')}`);
    }
    return Verdict.allow();
  }
}
