/**
 * The plugin's own Prometheus metrics: declared in the manifest with
 * {@link Metric}, updated from handlers with {@link counter}, {@link gauge}
 * and {@link histogram}. The host exports each as `herald_plugin_<name>` on
 * its `/metrics` endpoint, with a `plugin` label naming the plugin.
 *
 * ```js
 * new Manifest('crash-watch', '0.1.0')
 *   .subscribe(Subscription.to(kinds.Pod))
 *   .metric(Metric.counter('alerts_total', 'Alerts sent').labels('namespace'))
 *   .metric(Metric.gauge('stuck', 'Pods stuck right now'))
 *   .metric(Metric.histogram('rollout_seconds', 'Rollout durations').buckets(10, 60, 300));
 *
 * // In a handler:
 * metrics.counter('alerts_total').with('shop').inc();
 * metrics.gauge('stuck').set(3);
 * metrics.histogram('rollout_seconds').observe(12.5);
 * ```
 *
 * Updates return nothing: the host drops an update it cannot apply (a name
 * the manifest did not define, the wrong kind for the metric, the wrong
 * number of label values, a negative counter increment, NaN), counts it and
 * logs a warning in the plugin's log. A metric never fails a handler. Each
 * plugin holds a bounded number of series (label value combinations, 1,000
 * by default): keep label values few (a namespace, a reason, never a Pod
 * name).
 *
 * @module
 */

import { host } from './host.js';

const NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/**
 * What a metric measures (the WIT `metric-kind`).
 *
 * @readonly
 * @enum {string}
 */
export const MetricKind = Object.freeze({
  /** A count that only goes up. */
  Counter: 'counter',
  /** A value that goes up and down. */
  Gauge: 'gauge',
  /** Observations counted into buckets. */
  Histogram: 'histogram',
});

/**
 * One metric the plugin will update, declared with `Manifest.metric`. Start
 * from {@link Metric.counter}, {@link Metric.gauge} or {@link Metric.histogram}.
 *
 * The host refuses to load a plugin whose definitions break Prometheus'
 * naming rules ({@link Metric#problem} says which): names and label names
 * `[a-zA-Z_][a-zA-Z0-9_]*`, counters ending in `_total`, no label named
 * `plugin` (nor `le` on histograms), bucket bounds strictly increasing.
 */
export class Metric {
  /**
   * @param {MetricKind} kind
   * @param {string} name The name, without the `herald_plugin_` prefix the host adds.
   * @param {string} help One line saying what it measures (the `# HELP` text).
   */
  constructor(kind, name, help) {
    if (!Object.values(MetricKind).includes(kind)) {
      throw new TypeError(`metric kind must be one of ${Object.values(MetricKind).join(', ')}, got ${String(kind)}`);
    }
    if (typeof name !== 'string' || typeof help !== 'string') {
      throw new TypeError('a metric takes a name and a help text (strings)');
    }
    /** Counter, gauge or histogram. */
    this.kind = kind;
    /** The name. */
    this.name = name;
    /** The `# HELP` text. */
    this.help = help;
    /** The label names; every update gives one value for each, in this order. @type {string[]} */
    this.labelNames = [];
    /** A histogram's bucket upper bounds; empty for Prometheus' defaults (5 ms to 10 s). @type {number[]} */
    this.bucketBounds = [];
  }

  /** A counter; its name must end in `_total`. @param {string} name @param {string} help @returns {Metric} */
  static counter(name, help) {
    return new Metric(MetricKind.Counter, name, help);
  }

  /** A gauge. @param {string} name @param {string} help @returns {Metric} */
  static gauge(name, help) {
    return new Metric(MetricKind.Gauge, name, help);
  }

  /** A histogram, with Prometheus' default buckets until {@link Metric#buckets}. @param {string} name @param {string} help @returns {Metric} */
  static histogram(name, help) {
    return new Metric(MetricKind.Histogram, name, help);
  }

  /**
   * Adds label names; updates then give one value for each, in order.
   *
   * @param {...string} names
   * @returns {this}
   */
  labels(...names) {
    this.labelNames.push(...names);
    return this;
  }

  /**
   * Sets a histogram's bucket upper bounds (strictly increasing; `+Inf` is implied).
   *
   * @param {...number} bounds
   * @returns {this}
   */
  buckets(...bounds) {
    this.bucketBounds = bounds.map(Number);
    return this;
  }

  /**
   * What the host would refuse this definition for, or `undefined`.
   *
   * @returns {string | undefined}
   */
  problem() {
    const { name, labelNames, bucketBounds } = this;
    const quoted = JSON.stringify(name);
    if (!NAME.test(name)) {
      return `metric name ${quoted} is not [a-zA-Z_][a-zA-Z0-9_]*`;
    }
    if (this.kind === MetricKind.Counter && !name.endsWith('_total')) {
      return `counter ${quoted} must end in _total`;
    }
    for (const [index, label] of labelNames.entries()) {
      if (typeof label !== 'string' || !NAME.test(label)) {
        return `metric ${quoted}: label name ${JSON.stringify(label)} is not [a-zA-Z_][a-zA-Z0-9_]*`;
      }
      if (label === 'plugin' || (this.kind === MetricKind.Histogram && label === 'le')) {
        return `metric ${quoted}: label name ${JSON.stringify(label)} is reserved`;
      }
      if (labelNames.indexOf(label) < index) {
        return `metric ${quoted}: label ${JSON.stringify(label)} twice`;
      }
    }
    if (
      this.kind === MetricKind.Histogram &&
      bucketBounds.some((bound, index) => Number.isNaN(bound) || (index > 0 && bucketBounds[index - 1] >= bound))
    ) {
      return `histogram ${quoted}: buckets must be strictly increasing`;
    }
    return undefined;
  }

  /**
   * The contract's `metric-definition` record.
   *
   * @returns {import('../types/index.js').MetricDefinitionRecord}
   */
  toRecord() {
    return {
      name: this.name,
      help: this.help,
      kind: this.kind,
      labelNames: [...this.labelNames],
      buckets: Float64Array.from(this.bucketBounds),
    };
  }
}

/** A metric named for updates, with its label values. */
class Series {
  #name;
  #labelValues;

  /** @param {string} name @param {string[]} [labelValues] */
  constructor(name, labelValues = []) {
    this.#name = name;
    this.#labelValues = labelValues;
  }

  /**
   * The series with these label values, one per declared label name, in
   * order (the Rust SDK's `.with(&[..])`).
   *
   * @param {...string} values
   * @returns {this}
   */
  with(...values) {
    return /** @type {this} */ (new /** @type {any} */ (this.constructor)(this.#name, values.map(String)));
  }

  /** @param {'add' | 'set' | 'observe'} op @param {number} value */
  update(op, value) {
    host()[`metrics${op[0].toUpperCase()}${op.slice(1)}`](this.#name, [...this.#labelValues], Number(value));
  }
}

/** Updates of a counter: only up. */
export class Counter extends Series {
  /** Adds 1. */
  inc() {
    this.update('add', 1);
  }

  /** Adds `value` (at least 0). @param {number} value */
  add(value) {
    this.update('add', value);
  }
}

/** Updates of a gauge: set, up or down. */
export class Gauge extends Series {
  /** Sets the gauge to `value`. @param {number} value */
  set(value) {
    this.update('set', value);
  }

  /** Adds `value` (any sign). @param {number} value */
  add(value) {
    this.update('add', value);
  }

  /** Adds 1. */
  inc() {
    this.update('add', 1);
  }

  /** Subtracts 1. */
  dec() {
    this.update('add', -1);
  }
}

/** Updates of a histogram: observations. */
export class Histogram extends Series {
  /** Records one observation (seconds, for a `_seconds` histogram). @param {number} value */
  observe(value) {
    this.update('observe', value);
  }
}

/** The counter `name` declared in the manifest, for updates. @param {string} name @returns {Counter} */
export function counter(name) {
  return new Counter(name);
}

/** The gauge `name` declared in the manifest, for updates. @param {string} name @returns {Gauge} */
export function gauge(name) {
  return new Gauge(name);
}

/** The histogram `name` declared in the manifest, for updates. @param {string} name @returns {Histogram} */
export function histogram(name) {
  return new Histogram(name);
}
