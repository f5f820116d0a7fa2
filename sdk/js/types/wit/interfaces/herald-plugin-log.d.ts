declare module 'herald:plugin/log@0.2.0' {
  /**
   * Write one log line. The host may rate-limit a plugin that floods.
   */
  export function log(level: Level, message: string): void;
  /**
   * Severity of a log line.
   * # Variants
   * 
   * ## `"trace"`
   * 
   * ## `"debug"`
   * 
   * ## `"info"`
   * 
   * ## `"warn"`
   * 
   * ## `"error"`
   */
  export type Level = 'trace' | 'debug' | 'info' | 'warn' | 'error';
}
