/// <reference path="./herald-plugin-kube.d.ts" />
/// <reference path="./herald-plugin-types.d.ts" />
declare module 'herald:plugin/events@0.2.0' {
  /**
   * Records `event`. Returns once the Event is written (or merged into
   * the series of an identical recent one, or dropped by the flood limit,
   * which is not an error).
   */
  export function publish(event: Event): void;
  export type GroupVersionKind = import('herald:plugin/types@0.2.0').GroupVersionKind;
  export type KubeError = import('herald:plugin/kube@0.2.0').KubeError;
  /**
   * Normal or Warning, as Kubernetes defines them.
   * # Variants
   * 
   * ## `"normal"`
   * 
   * ## `"warning"`
   */
  export type EventType = 'normal' | 'warning';
  /**
   * The object an event is about.
   */
  export interface ObjectReference {
    /**
     * Its kind.
     */
    kind: GroupVersionKind,
    /**
     * Its namespace; `none` for cluster-scoped objects.
     */
    namespace?: string,
    /**
     * Its name.
     */
    name: string,
    /**
     * Its UID, when known.
     */
    uid?: string,
    /**
     * Its resourceVersion, when known.
     */
    resourceVersion?: string,
  }
  /**
   * One event.
   */
  export interface Event {
    /**
     * What the event is about.
     */
    regarding: ObjectReference,
    /**
     * A second object involved, if any.
     */
    related?: ObjectReference,
    /**
     * Normal or Warning.
     */
    eventType: EventType,
    /**
     * Why, in UpperCamelCase (at most 128 characters), e.g. `DisallowedImage`.
     */
    reason: string,
    /**
     * What the plugin did or failed to do, in UpperCamelCase (at most
     * 128 characters), e.g. `Labelled`.
     */
    action: string,
    /**
     * A human-readable description (at most 1 KiB).
     */
    note: string,
  }
}
