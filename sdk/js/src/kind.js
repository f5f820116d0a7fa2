/**
 * `GroupVersionKind`: how the contract names a Kubernetes kind.
 *
 * @module
 */

/**
 * A Kubernetes group, version and kind, e.g. `apps`/`v1`/`Deployment`. The
 * core group is the empty string. Immutable.
 */
export class GroupVersionKind {
  /**
   * @param {string} group The API group; `''` for the core group.
   * @param {string} version The version within the group, e.g. `v1`.
   * @param {string} kind The kind, e.g. `Deployment`.
   */
  constructor(group, version, kind) {
    for (const [name, value] of [['group', group], ['version', version], ['kind', kind]]) {
      if (typeof value !== 'string') {
        throw new TypeError(`GroupVersionKind: ${name} must be a string, got ${typeof value}`);
      }
    }
    /** The API group; empty for the core group (Pods, ConfigMaps, ...). */
    this.group = group;
    /** The API version within the group, e.g. `v1`. */
    this.version = version;
    /** The kind, e.g. `Deployment`. */
    this.kind = kind;
    Object.freeze(this);
  }

  /**
   * A kind from anything shaped like one: a `GroupVersionKind`, a plain
   * `{group, version, kind}` record (as the host sends), or a Kubernetes
   * object with `apiVersion` and `kind`.
   *
   * @param {GroupVersionKind | {group: string, version: string, kind: string} | {apiVersion: string, kind: string}} value
   * @returns {GroupVersionKind}
   */
  static from(value) {
    if (value instanceof GroupVersionKind) {
      return value;
    }
    if (value === null || typeof value !== 'object') {
      throw new TypeError(`expected a kind ({group, version, kind}), got ${value === null ? 'null' : typeof value}`);
    }
    if (typeof value.apiVersion === 'string') {
      return GroupVersionKind.ofObject(value);
    }
    return new GroupVersionKind(value.group, value.version, value.kind);
  }

  /**
   * The kind of a Kubernetes object, from its `apiVersion` and `kind`.
   *
   * @param {{apiVersion?: string, kind?: string}} object
   * @returns {GroupVersionKind}
   */
  static ofObject(object) {
    const apiVersion = object?.apiVersion;
    const kind = object?.kind;
    if (typeof apiVersion !== 'string' || typeof kind !== 'string') {
      throw new TypeError('the object has no string apiVersion and kind to take its kind from');
    }
    const slash = apiVersion.indexOf('/');
    return slash === -1
      ? new GroupVersionKind('', apiVersion, kind)
      : new GroupVersionKind(apiVersion.slice(0, slash), apiVersion.slice(slash + 1), kind);
  }

  /**
   * The `apiVersion` string: `group/version`, or `version` for the core
   * group.
   *
   * @returns {string}
   */
  apiVersion() {
    return this.group === '' ? this.version : `${this.group}/${this.version}`;
  }

  /**
   * Whether `other` names the same kind.
   *
   * @param {GroupVersionKind | {group: string, version: string, kind: string}} other
   * @returns {boolean}
   */
  equals(other) {
    return this.group === other.group && this.version === other.version && this.kind === other.kind;
  }

  /**
   * `group/version/kind`, or `version/kind` for the core group: `apps/v1/Deployment`, `v1/Pod`.
   *
   * @returns {string}
   */
  toString() {
    return `${this.apiVersion()}/${this.kind}`;
  }

  /**
   * The record the contract uses (`group-version-kind`).
   *
   * @returns {{group: string, version: string, kind: string}}
   */
  toRecord() {
    return { group: this.group, version: this.version, kind: this.kind };
  }
}
