/**
 * Admission: deciding on writes before they reach the cluster (world
 * 0.5.0). A plugin declares its webhooks in the manifest
 * (`Manifest.validating`, `Manifest.mutating`) and answers the handler's
 * `validate(review)` and `mutate(review)` for each {@link AdmissionReview}
 * the API server sends through the host.
 *
 * During an admission call the plugin may read the cache (within its read
 * grants) and nothing else: writes, Events and HTTP are refused, because a
 * review must have no side effects. A throw (or a rejection) in `validate`
 * or `mutate` is a fault: the host answers by the webhook's failure policy.
 *
 * ```js
 * export default class NoLatest extends Handler {
 *   manifest() {
 *     return new Manifest('no-latest', '0.1.0')
 *       .validating(new Webhook().rule(AdmissionRule.to(kinds.Pod).create().update()));
 *   }
 *   validate(review) {
 *     const latest = review.object.spec.containers.filter((c) => c.image.endsWith(':latest'));
 *     return latest.length > 0 ? Verdict.deny('images must be pinned, not :latest') : Verdict.allow();
 *   }
 * }
 * ```
 *
 * @module
 */

import { HeraldError } from './errors.js';
import { GroupVersionKind } from './kind.js';

/**
 * The operation a review is about, as AdmissionReview spells it.
 *
 * @readonly
 * @enum {string}
 */
export const Operation = Object.freeze({
  /** An object is created. */
  Create: 'CREATE',
  /** An object is changed. */
  Update: 'UPDATE',
  /** An object is deleted. */
  Delete: 'DELETE',
  /** A connect subresource is used (`exec`, `attach`, `portforward`). */
  Connect: 'CONNECT',
});

const OPERATIONS = Object.values(Operation);

/**
 * What the API server does when the plugin cannot decide (a fault, a
 * timeout, the plugin gone); the WIT `failure-policy`.
 *
 * @readonly
 * @enum {string}
 */
export const FailurePolicy = Object.freeze({
  /** Refuse the write (Kubernetes' default). */
  Fail: 'fail',
  /** Let the write through. */
  Ignore: 'ignore',
});

/** `value` as an {@link Operation}: one, or its name in any case (`'create'`). */
function operationOf(value) {
  const operation = typeof value === 'string' ? value.toUpperCase() : value;
  if (!OPERATIONS.includes(operation)) {
    throw new TypeError(`unknown operation ${String(value)}: one of ${OPERATIONS.join(', ')}`);
  }
  return operation;
}

/**
 * One kind of write a webhook covers: a kind, its operations and optionally
 * a subresource. Start from {@link AdmissionRule.to}.
 *
 * ```js
 * AdmissionRule.to(kinds.Pod).create().update();
 * AdmissionRule.to('apps', 'v1', 'Deployment').operation('UPDATE').subresource('scale');
 * ```
 */
export class AdmissionRule {
  #kind;
  #operations = [];
  #subresource = undefined;

  /**
   * A rule for `kind`, with no operation yet.
   *
   * @param {GroupVersionKind | {group: string, version: string, kind: string}} kind
   */
  constructor(kind) {
    this.#kind = GroupVersionKind.from(kind);
  }

  /**
   * A rule for a kind: a typed kind (`AdmissionRule.to(kinds.Pod)`), a
   * `{group, version, kind}` record, or three strings.
   *
   * @param {GroupVersionKind | {group: string, version: string, kind: string} | string} kindOrGroup
   * @param {string} [version]
   * @param {string} [kind]
   * @returns {AdmissionRule}
   */
  static to(kindOrGroup, version, kind) {
    return new AdmissionRule(typeof kindOrGroup === 'string' ? new GroupVersionKind(kindOrGroup, version, kind) : kindOrGroup);
  }

  /**
   * Adds operations: {@link Operation} values or their names in any case.
   *
   * @param {...Operation} operations
   * @returns {this}
   */
  operation(...operations) {
    for (const operation of operations.map(operationOf)) {
      if (!this.#operations.includes(operation)) {
        this.#operations.push(operation);
      }
    }
    return this;
  }

  /** Adds `CREATE`. @returns {this} */
  create() {
    return this.operation(Operation.Create);
  }

  /** Adds `UPDATE`. @returns {this} */
  update() {
    return this.operation(Operation.Update);
  }

  /** Adds `DELETE`. @returns {this} */
  delete() {
    return this.operation(Operation.Delete);
  }

  /** Adds `CONNECT`. @returns {this} */
  connect() {
    return this.operation(Operation.Connect);
  }

  /**
   * Covers the subresource `name` (`'status'`) instead of the object itself.
   *
   * @param {string} name
   * @returns {this}
   */
  subresource(name) {
    if (typeof name !== 'string' || name === '') {
      throw new TypeError('a subresource is a non-empty string, e.g. "status"');
    }
    this.#subresource = name;
    return this;
  }

  /** The operations covered so far. @returns {Operation[]} */
  get operations() {
    return [...this.#operations];
  }

  /**
   * The contract's `rule` record (operations as the WIT spells them: `create`, ...).
   *
   * @returns {import('../types/index.js').AdmissionRuleRecord}
   */
  toRecord() {
    return {
      kind: this.#kind.toRecord(),
      operations: this.#operations.map((operation) => operation.toLowerCase()),
      subresource: this.#subresource,
    };
  }
}

/**
 * A webhook: the writes the API server sends the plugin for one decision
 * (validate or mutate). Failing closed, with the API server's default
 * timeout (10 s), until told otherwise.
 *
 * ```js
 * new Webhook().rule(AdmissionRule.to(kinds.Pod).create()).inNamespaces('shop', 'web')
 *   .failurePolicy(FailurePolicy.Ignore).timeoutSeconds(5);
 * ```
 */
export class Webhook {
  #rules = [];
  #namespaceSelector = undefined;
  #objectSelector = undefined;
  #failurePolicy = FailurePolicy.Fail;
  #timeoutSeconds = undefined;

  /**
   * Adds a rule.
   *
   * @param {AdmissionRule} rule
   * @returns {this}
   */
  rule(rule) {
    if (!(rule instanceof AdmissionRule)) {
      throw new TypeError('rule() takes an AdmissionRule, e.g. AdmissionRule.to(kinds.Pod).create()');
    }
    this.#rules.push(rule);
    return this;
  }

  /**
   * Only namespaces whose labels match `selector` (label-selector syntax).
   *
   * @param {string} selector
   * @returns {this}
   */
  namespacesLabelled(selector) {
    this.#namespaceSelector = requireString(selector, 'namespace selector');
    return this;
  }

  /**
   * Only the namespaces named (by their `kubernetes.io/metadata.name` label,
   * which the API server sets on every namespace).
   *
   * @param {...string} names
   * @returns {this}
   */
  inNamespaces(...names) {
    return this.namespacesLabelled(`kubernetes.io/metadata.name in (${names.join(',')})`);
  }

  /**
   * Only objects whose labels match `selector`.
   *
   * @param {string} selector
   * @returns {this}
   */
  objectsLabelled(selector) {
    this.#objectSelector = requireString(selector, 'object selector');
    return this;
  }

  /**
   * What happens when the plugin cannot decide.
   *
   * @param {FailurePolicy} policy `'fail'` or `'ignore'`.
   * @returns {this}
   */
  failurePolicy(policy) {
    if (!Object.values(FailurePolicy).includes(policy)) {
      throw new TypeError(`the failure policy is one of ${Object.values(FailurePolicy).join(', ')}, got ${String(policy)}`);
    }
    this.#failurePolicy = policy;
    return this;
  }

  /**
   * How long the API server waits for the answer, 1 to 30 seconds.
   *
   * @param {number} seconds
   * @returns {this}
   */
  timeoutSeconds(seconds) {
    if (!Number.isInteger(seconds)) {
      throw new TypeError(`the timeout is a whole number of seconds, got ${String(seconds)}`);
    }
    this.#timeoutSeconds = seconds;
    return this;
  }

  /**
   * What the host would refuse in this webhook, declared as `role`
   * (`validating` or `mutating`).
   *
   * @param {'validating' | 'mutating'} role
   * @returns {string[]}
   */
  problems(role) {
    const found = [];
    if (this.#rules.length === 0) {
      found.push(`admission.${role}.rules is empty: a webhook admits at least one kind`);
    }
    this.#rules.forEach((rule, index) => {
      if (rule.operations.length === 0) {
        found.push(`admission.${role}.rules[${index}].operations is empty: name at least one`);
      }
    });
    const timeout = this.#timeoutSeconds;
    if (timeout !== undefined && (timeout < 1 || timeout > 30)) {
      found.push(`admission.${role}.timeoutSeconds must be 1 to 30 (Kubernetes' bounds)`);
    }
    return found;
  }

  /**
   * The contract's `webhook` record.
   *
   * @returns {import('../types/index.js').WebhookRecord}
   */
  toRecord() {
    return {
      rules: this.#rules.map((rule) => rule.toRecord()),
      namespaceSelector: this.#namespaceSelector,
      objectSelector: this.#objectSelector,
      failurePolicy: this.#failurePolicy,
      timeoutSeconds: this.#timeoutSeconds,
    };
  }
}

function requireString(value, what) {
  if (typeof value !== 'string') {
    throw new TypeError(`${what} must be a string, got ${typeof value}`);
  }
  return value;
}

function parse(json, what) {
  if (json === undefined) {
    throw new HeraldError(`the review carries no ${what}`);
  }
  try {
    return JSON.parse(json);
  } catch (error) {
    throw new HeraldError(`decoding the review's ${what}: ${error.message}`);
  }
}

/**
 * One write the API server asks about. `review.object` is the object as it
 * would be stored and `review.oldObject` the one stored, each parsed from
 * JSON on first use; the first throws a `HeraldError` on a delete, the
 * second on a create (`objectJson` and `oldObjectJson` are `undefined`
 * then). Immutable.
 */
export class AdmissionReview {
  #parsed = new Map();

  /**
   * A review from the contract's `review` record, as the host sends it
   * (tests build theirs with `testing.creating`, `updating`, `deleting`).
   *
   * @param {import('../types/index.js').AdmissionReviewRecord} record
   */
  constructor(record) {
    /** The review's identifier. */
    this.uid = record.uid;
    /** The kind of the object, in the version the plugin declared. */
    this.kind = GroupVersionKind.from(record.kind);
    /** The resource, plural (`pods`). */
    this.resource = record.resource;
    /** The subresource written; `''` for the object itself. */
    this.subresource = record.subresource ?? '';
    /** The object's name; `''` on a create whose name the server generates. */
    this.name = record.name ?? '';
    /** Its namespace; `''` for cluster-scoped kinds. */
    this.namespace = record.namespace ?? '';
    /** What is being done: `'CREATE'`, `'UPDATE'`, `'DELETE'` or `'CONNECT'`. */
    this.operation = operationOf(record.operation);
    const userInfo = record.userInfo ?? {};
    /** Who is doing it; `extra` maps each attribute to its values. */
    this.userInfo = Object.freeze({
      username: userInfo.username ?? '',
      uid: userInfo.uid ?? '',
      groups: Object.freeze([...(userInfo.groups ?? [])]),
      extra: Object.freeze(Object.fromEntries(userInfo.extra ?? [])),
    });
    /** The object as it would be stored, as JSON text; `undefined` on a delete. */
    this.objectJson = record.object;
    /** The object as it is stored, as JSON text; `undefined` on a create. */
    this.oldObjectJson = record.oldObject;
    /** Whether the write will not persist. */
    this.dryRun = Boolean(record.dryRun);
    /** The operation's options (CreateOptions, ...) as JSON text; `undefined` when absent. */
    this.optionsJson = record.options;
    Object.freeze(this);
  }

  #parse(what, json) {
    if (!this.#parsed.has(what)) {
      this.#parsed.set(what, parse(json, what));
    }
    return this.#parsed.get(what);
  }

  /** The object as it would be stored, parsed once. @returns {any} */
  get object() {
    return this.#parse('object', this.objectJson);
  }

  /** The object as it is stored, parsed once. @returns {any} */
  get oldObject() {
    return this.#parse('oldObject', this.oldObjectJson);
  }

  /** The operation's options, parsed; `undefined` when absent. @returns {any} */
  get options() {
    return this.optionsJson === undefined ? undefined : this.#parse('options', this.optionsJson);
  }

  /** `namespace/name`, or `name` when cluster-scoped. @returns {string} */
  get key() {
    return this.namespace === '' ? this.name : `${this.namespace}/${this.name}`;
  }

  /**
   * The contract's `review` record this review was made from.
   *
   * @returns {import('../types/index.js').AdmissionReviewRecord}
   */
  toRecord() {
    return {
      uid: this.uid,
      kind: this.kind.toRecord(),
      resource: this.resource,
      subresource: this.subresource,
      name: this.name,
      namespace: this.namespace,
      operation: this.operation.toLowerCase(),
      userInfo: {
        username: this.userInfo.username,
        uid: this.userInfo.uid,
        groups: [...this.userInfo.groups],
        extra: Object.entries(this.userInfo.extra).map(([name, values]) => [name, [...values]]),
      },
      object: this.objectJson,
      oldObject: this.oldObjectJson,
      dryRun: this.dryRun,
      options: this.optionsJson,
    };
  }
}

/**
 * A decision: allow, or refuse with a message (and an HTTP code); warnings
 * either way. Build one with {@link Verdict.allow} or {@link Verdict.deny}.
 * Immutable.
 */
export class Verdict {
  /**
   * @param {{allowed: boolean, message?: string, code?: number, warnings?: string[]}} fields
   */
  constructor({ allowed, message = '', code = undefined, warnings = [] }) {
    if (code !== undefined && !(Number.isInteger(code) && code >= 400 && code <= 599)) {
      throw new RangeError(`a refusal's code is 400 to 599, got ${String(code)}`);
    }
    /** Whether the write may go ahead. */
    this.allowed = Boolean(allowed);
    /** Why it was refused, for the user. */
    this.message = requireString(message, 'message');
    /** The HTTP status of a refusal (400 to 599); `undefined`: 403. */
    this.code = code;
    /** Warnings the user's client prints. */
    this.warnings = Object.freeze(warnings.map((warning) => requireString(warning, 'a warning')));
    Object.freeze(this);
  }

  /** Let the write through. @returns {Verdict} */
  static allow() {
    return new Verdict({ allowed: true });
  }

  /**
   * Refuse it, saying why; `code` is the HTTP status (403 Forbidden unless
   * given).
   *
   * @param {string} message
   * @param {number} [code] 400 to 599.
   * @returns {Verdict}
   */
  static deny(message, code) {
    return new Verdict({ allowed: false, message, code });
  }

  /**
   * The same decision with one more warning.
   *
   * @param {string} warning
   * @returns {Verdict}
   */
  warn(warning) {
    return new Verdict({ ...this, warnings: [...this.warnings, warning] });
  }

  /**
   * The contract's `verdict` record.
   *
   * @returns {import('../types/index.js').VerdictRecord}
   */
  toRecord() {
    return { allowed: this.allowed, code: this.code, message: this.message, warnings: [...this.warnings] };
  }
}

/**
 * What a mutating plugin answers: its decision and at most one change, a
 * JSON Patch or the whole changed object (ignored when the write is
 * refused). Build one with {@link Mutation.none}, {@link Mutation.patch},
 * {@link Mutation.object} or {@link Mutation.deny}. Immutable.
 */
export class Mutation {
  /**
   * @param {Verdict} verdict
   * @param {{jsonPatch?: object[], changedObject?: object}} [change] At most one.
   */
  constructor(verdict, { jsonPatch = undefined, changedObject = undefined } = {}) {
    if (!(verdict instanceof Verdict)) {
      throw new TypeError('a Mutation needs a Verdict');
    }
    if (jsonPatch !== undefined && changedObject !== undefined) {
      throw new TypeError('a mutation changes the object by a JSON Patch or by the changed object, not both');
    }
    if (jsonPatch !== undefined && !Array.isArray(jsonPatch)) {
      throw new TypeError('a JSON Patch is an array of operations');
    }
    if (changedObject !== undefined && (changedObject === null || typeof changedObject !== 'object' || Array.isArray(changedObject))) {
      throw new TypeError('the changed object is an object');
    }
    /** The decision. */
    this.verdict = verdict;
    /** A JSON Patch (RFC 6902) against the review's object, or `undefined`. */
    this.jsonPatch = jsonPatch;
    /** The whole changed object (the host computes the patch), or `undefined`. */
    this.changedObject = changedObject;
    Object.freeze(this);
  }

  /** Allow, unchanged. @returns {Mutation} */
  static none() {
    return new Mutation(Verdict.allow());
  }

  /**
   * Allow with a JSON Patch, e.g.
   * `[{op: 'add', path: '/metadata/labels/team', value: 'web'}]`.
   *
   * @param {object[]} operations
   * @returns {Mutation}
   */
  static patch(operations) {
    return new Mutation(Verdict.allow(), { jsonPatch: operations });
  }

  /**
   * Allow, changed into `changed` (the review's object, modified).
   *
   * @param {object} changed
   * @returns {Mutation}
   */
  static object(changed) {
    return new Mutation(Verdict.allow(), { changedObject: changed });
  }

  /**
   * Refuse, as {@link Verdict.deny}.
   *
   * @param {string} message
   * @param {number} [code]
   * @returns {Mutation}
   */
  static deny(message, code) {
    return new Mutation(Verdict.deny(message, code));
  }

  /**
   * The same answer with one more warning.
   *
   * @param {string} warning
   * @returns {Mutation}
   */
  warn(warning) {
    return new Mutation(this.verdict.warn(warning), { jsonPatch: this.jsonPatch, changedObject: this.changedObject });
  }

  /**
   * The contract's `mutation` record (the change as JSON text).
   *
   * @returns {import('../types/index.js').MutationRecord}
   */
  toRecord() {
    let change = { tag: 'none' };
    if (this.jsonPatch !== undefined) {
      change = { tag: 'json-patch', val: JSON.stringify(this.jsonPatch) };
    } else if (this.changedObject !== undefined) {
      change = { tag: 'object', val: JSON.stringify(this.changedObject) };
    }
    return { verdict: this.verdict.toRecord(), change };
  }
}

/**
 * The error of a plugin asked to `decision` (`validate`, `mutate`) that
 * does not define it.
 *
 * @param {string} plugin The plugin's class name.
 * @param {'validate' | 'mutate'} decision
 * @returns {HeraldError}
 */
export function doesNotAdmit(plugin, decision) {
  return new HeraldError(`the plugin does not admit: ${plugin} defines no ${decision}()`);
}
