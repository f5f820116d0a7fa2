/**
 * The error a handler throws, and how any thrown value becomes the message
 * the host records (the `message` of the WIT `failure` that `deliver`
 * returns; the `err(string)` of admission's `validate` and `mutate`).
 *
 * @module
 */

/**
 * A handler failure with a message. The host records the message and
 * retries the notification with backoff a bounded number of times. Any
 * thrown value works as well; this class adds {@link HeraldError#context}.
 */
export class HeraldError extends Error {
  /**
   * @param {string} message What went wrong; the host records it as is.
   * @param {{cause?: unknown}} [options] The underlying error, if any; its
   *   message is appended when the error crosses to the host.
   */
  constructor(message, options) {
    super(message, options);
    this.name = 'HeraldError';
  }

  /**
   * A new error whose message is prefixed with what was being done, as in
   * `decoding config: Unexpected token`.
   *
   * @param {string} doing What the code was doing when it failed.
   * @returns {HeraldError}
   */
  context(doing) {
    return new HeraldError(`${doing}: ${this.message}`, { cause: this.cause });
  }
}

/**
 * The message the host records for a thrown value: an `Error`'s message (its
 * name first unless it is a plain `Error` or a {@link HeraldError}), followed
 * by the messages of its `cause` chain; a string as is; anything else as
 * `String(value)`.
 *
 * @param {unknown} thrown Whatever a handler threw.
 * @returns {string}
 */
export function messageOf(thrown) {
  if (!(thrown instanceof Error)) {
    return typeof thrown === 'string' ? thrown : String(thrown);
  }
  const parts = [];
  const seen = new Set();
  for (let error = thrown; error !== undefined && error !== null && !seen.has(error); error = error.cause) {
    seen.add(error);
    if (error instanceof Error) {
      const plain = error.name === 'Error' || error instanceof HeraldError;
      parts.push(plain ? error.message : `${error.name}: ${error.message}`);
    } else {
      parts.push(String(error));
      break;
    }
  }
  return parts.join(': ');
}
