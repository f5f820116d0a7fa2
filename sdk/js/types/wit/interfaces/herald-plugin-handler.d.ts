/// <reference path="./herald-plugin-types.d.ts" />
declare module 'herald:plugin/handler@0.2.0' {
  /**
   * An object was first seen (or replayed on join: `is-initial-list`).
   */
  export function onAdd(ctx: EventContext, obj: string): void;
  /**
   * An object changed from `old` to `new` (equal on resync: `is-resync`).
   */
  export function onUpdate(ctx: EventContext, old: string, new_: string): void;
  /**
   * An object was deleted; `obj` is its last known state.
   */
  export function onDelete(ctx: EventContext, obj: string): void;
  export type EventContext = import('herald:plugin/types@0.2.0').EventContext;
}
