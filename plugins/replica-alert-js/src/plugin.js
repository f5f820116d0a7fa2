// @ts-check
/**
 * replica-alert (JavaScript): a small controller that watches Deployments
 * and, while one has fewer available replicas than it asks for, says so
 * everywhere a controller can:
 *
 * - **a ConfigMap write**: server-side applies `replica-alert-<deployment>`
 *   in the Deployment's namespace (owned by the Deployment, so Kubernetes
 *   deletes it with it) with the Deployment's state: `degraded` or `ok`,
 *   desired and available replicas;
 * - **an Event**: Warning `ReplicasUnavailable` on the Deployment when it
 *   becomes degraded, Normal `ReplicasAvailable` when it recovers;
 * - **a metric**: `herald_plugin_alerts_total{namespace}` counts the alerts;
 * - **an HTTP POST** (`fetch`): a JSON message to the configured webhook on
 *   each alert and recovery;
 * - **a requeue**: while degraded, it asks for the Deployment again in 30 s,
 *   a level-triggered re-check that refreshes the ConfigMap even when no
 *   event comes.
 *
 * The alert and the recovery are sent once per episode: the episode lives in
 * the plugin instance, so after an instance rebuild an ongoing episode is
 * alerted once more (at least once, never silently dropped). A webhook that
 * fails (a network error, or a status other than 2xx) fails the call: the
 * host retries the Deployment with backoff, and the retry sends what is
 * pending.
 *
 * Configuration: `{"webhookUrl": "https://hooks.example.com/replicas"}`
 * (optional: without it, alerts are logged, recorded and counted).
 */

import {
  EVENTS,
  HTTP,
  Handler,
  HeraldError,
  Manifest,
  Metric,
  Subscription,
  Verb,
  WriteRule,
  config,
  deadline,
  events,
  kinds,
  kube,
  log,
  metrics,
  workqueue,
} from '@herald/sdk';

/** The counter of alerts sent. */
export const ALERTS = 'alerts_total';
/** How long to wait before looking at a degraded Deployment again, in milliseconds. */
export const RECHECK_MS = 30_000;
/** The least time left in the call for a webhook request to be worth sending, in milliseconds. */
export const WEBHOOK_MIN_MS = 100;

/**
 * The configuration, checked: `webhookUrl` (optional) and nothing else.
 *
 * @returns {{webhookUrl?: string}}
 */
export function settings() {
  const raw = config.get() ?? {};
  if (raw === null || typeof raw !== 'object' || Object.keys(raw).some((key) => key !== 'webhookUrl')) {
    throw new HeraldError('the plugin configuration: expected {"webhookUrl": "https://..."} at most');
  }
  if (raw.webhookUrl !== undefined && typeof raw.webhookUrl !== 'string') {
    throw new HeraldError('the plugin configuration: webhookUrl must be a string');
  }
  return raw;
}

/**
 * `status.availableReplicas`, or 0.
 *
 * @param {import('@herald/sdk').Deployment} deployment
 */
export function available(deployment) {
  return deployment.status?.availableReplicas ?? 0;
}

/**
 * The ConfigMap applied for `deployment`: its state and replica counts,
 * owned by the Deployment.
 *
 * @param {import('@herald/sdk').Deployment} deployment
 * @param {'degraded' | 'ok'} state
 */
export function statusConfigMap(deployment, state) {
  const { name, uid } = deployment.metadata ?? {};
  return {
    metadata: {
      labels: { 'app.kubernetes.io/managed-by': 'herald-replica-alert' },
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name, uid, controller: true }],
    },
    data: {
      deployment: name,
      state,
      desired: String(deployment.spec?.replicas ?? 1),
      available: String(available(deployment)),
    },
  };
}

/** Alerts while a Deployment has fewer available replicas than desired. */
export default class ReplicaAlert extends Handler {
  /** The keys of the Deployments in a degraded episode, and whether its alert reached the webhook. */
  degraded = new Map();
  /** The keys of the recovered Deployments whose message is still to be sent. */
  recovering = new Set();

  manifest() {
    return new Manifest('replica-alert-js', '0.1.0')
      .subscribe(Subscription.to(kinds.Deployment).coalesced())
      .write(WriteRule.to(kinds.ConfigMap).verbs(Verb.Apply).allNamespaces())
      .capability(EVENTS)
      .capability(HTTP)
      .metric(Metric.counter(ALERTS, 'Deployments found with replicas unavailable').labels('namespace'));
  }

  /** @param {import('@herald/sdk').Event<import('@herald/sdk').Deployment>} event */
  async onAdd(event) {
    await this.reconcile(event.key, event.object);
  }

  /** @param {import('@herald/sdk').Update<import('@herald/sdk').Deployment>} update */
  async onUpdate(update) {
    await this.reconcile(update.key, update.new);
  }

  /** @param {import('@herald/sdk').Event} event */
  onDelete(event) {
    this.degraded.delete(event.key);
    this.recovering.delete(event.key);
  }

  /**
   * Compares available with desired replicas and acts on the difference.
   *
   * @param {string} key
   * @param {import('@herald/sdk').Deployment} deployment
   */
  async reconcile(key, deployment) {
    const { webhookUrl } = settings();
    const [want, have] = [deployment.spec?.replicas ?? 1, available(deployment)];
    const namespace = deployment.metadata?.namespace ?? '';
    const name = `replica-alert-${deployment.metadata?.name}`;
    const configMaps = new kube.Api(kinds.ConfigMap, { namespace });
    if (have < want) {
      configMaps.apply(name, statusConfigMap(deployment, 'degraded'), { force: true });
      if (!this.degraded.has(key)) {
        log.warn(`degraded deployment=${key} available=${have} desired=${want}`);
        events.warning(deployment, 'ReplicasUnavailable', `${have} of ${want} replicas available`, { action: 'Alerted' });
        metrics.counter(ALERTS).with(namespace).inc();
        this.degraded.set(key, false);
      }
      if (!this.degraded.get(key)) {
        await this.post(webhookUrl, key, 'degraded', want, have);
        this.degraded.set(key, true);
      }
      workqueue.requeueAfter(RECHECK_MS);
    } else if (this.degraded.has(key) || this.recovering.has(key)) {
      if (this.degraded.delete(key)) {
        configMaps.apply(name, statusConfigMap(deployment, 'ok'), { force: true });
        log.info(`recovered deployment=${key} available=${have} desired=${want}`);
        events.normal(deployment, 'ReplicasAvailable', `${have} of ${want} replicas available`, { action: 'Recovered' });
        this.recovering.add(key);
      }
      await this.post(webhookUrl, key, 'recovered', want, have);
      this.recovering.delete(key);
    }
  }

  /**
   * POSTs the message to the webhook, if there is one. A failure (a network
   * error, a status other than 2xx, too little time left) fails the call, so
   * the host retries it, and the retry posts again.
   *
   * @param {string | undefined} webhookUrl
   * @param {string} key
   * @param {'degraded' | 'recovered'} state
   * @param {number} want
   * @param {number} have
   */
  async post(webhookUrl, key, state, want, have) {
    if (webhookUrl === undefined) {
      return;
    }
    if (deadline.remainingMs() < WEBHOOK_MIN_MS) {
      throw new HeraldError(`no time left to post ${state} for ${key}; retried`);
    }
    const message = { text: `${key}: ${have} of ${want} replicas available`, deployment: key, state, desired: want, available: have };
    let response;
    try {
      response = await fetch(webhookUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(message),
      });
    } catch (error) {
      log.warn(`webhook-failed deployment=${key} error=${error.message}`);
      throw new HeraldError(`POST ${webhookUrl}`, { cause: error });
    }
    if (!response.ok) {
      const excerpt = (await response.text()).slice(0, 200);
      log.warn(`webhook-failed deployment=${key} status=${response.status}`);
      throw new HeraldError(`POST ${webhookUrl}: unexpected status ${response.status}${excerpt ? `: ${excerpt}` : ''}`);
    }
    log.info(`posted deployment=${key} state=${state} status=${response.status}`);
  }
}
