/**
 * Logging into the host's log, tagged with the plugin's name:
 * `log.info('created', key)`. Arguments are joined with spaces; strings as
 * they are, errors as their message, anything else as JSON. The host may
 * rate-limit a plugin that floods.
 *
 * @module
 */

import { messageOf } from './errors.js';
import { host } from './host.js';

/**
 * Severity of a log line (the WIT `level`), least severe first.
 *
 * @readonly
 * @enum {string}
 */
export const Level = Object.freeze({
  /** Very detailed tracing. */
  Trace: 'trace',
  /** Diagnostics for developers. */
  Debug: 'debug',
  /** Normal facts worth recording. */
  Info: 'info',
  /** Something looks wrong. */
  Warn: 'warn',
  /** Something failed. */
  Error: 'error',
});

const LEVELS = Object.values(Level);

function render(value) {
  if (typeof value === 'string') {
    return value;
  }
  if (value instanceof Error) {
    return messageOf(value);
  }
  if (typeof value === 'bigint' || value === undefined || typeof value === 'function' || typeof value === 'symbol') {
    return String(value);
  }
  try {
    return JSON.stringify(value, (_, inner) => (typeof inner === 'bigint' ? inner.toString() : inner));
  } catch {
    return String(value);
  }
}

/**
 * The line the logging functions write for `parts`.
 *
 * @param {unknown[]} parts
 * @returns {string}
 */
export function format(parts) {
  return parts.map(render).join(' ');
}

/**
 * Writes one line at `level`. The level functions call this.
 *
 * @param {Level} level
 * @param {string} message
 */
export function write(level, message) {
  if (!LEVELS.includes(level)) {
    throw new TypeError(`log level must be one of ${LEVELS.join(', ')}, got ${String(level)}`);
  }
  host().log(level, String(message));
}

/** Logs a line at `trace`. @param {...unknown} parts */
export function trace(...parts) {
  write(Level.Trace, format(parts));
}

/** Logs a line at `debug`. @param {...unknown} parts */
export function debug(...parts) {
  write(Level.Debug, format(parts));
}

/** Logs a line at `info`: `log.info('created pod=' + key)`. @param {...unknown} parts */
export function info(...parts) {
  write(Level.Info, format(parts));
}

/** Logs a line at `warn`. @param {...unknown} parts */
export function warn(...parts) {
  write(Level.Warn, format(parts));
}

/** Logs a line at `error`. @param {...unknown} parts */
export function error(...parts) {
  write(Level.Error, format(parts));
}
