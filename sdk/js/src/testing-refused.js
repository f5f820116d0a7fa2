/**
 * What `@herald/sdk/testing` resolves to inside a component build: the fake
 * host belongs in tests, never in a plugin.
 *
 * @module
 * @internal
 */
throw new Error('@herald/sdk/testing is for tests: a plugin module must not import it');
