import type { z } from 'zod';
import { ConfigError } from '@tickfleet/core';

/** Environment variables by name, as `process.env` holds them. */
export type Env = Readonly<Record<string, string | undefined>>;

/**
 * Parses the variables `schema` names from `env`, once, at the process edge. An empty value counts
 * as unset (shells and manifests often leave them so), so it gets the default. The first bad
 * variable throws a ConfigError naming it and what was expected; a missing required one says it
 * must be set.
 */
export function parseConfig<S extends z.ZodObject>(schema: S, env: Env = process.env): z.infer<S> {
  const present: Record<string, string> = {};
  for (const name of Object.keys(schema.shape)) {
    const value = env[name];
    if (value !== undefined && value !== '') present[name] = value;
  }
  const result = schema.safeParse(present);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const variable = String(issue?.path[0] ?? 'environment');
  const expected = issue?.message ?? 'a valid value';
  throw new ConfigError(variable, present[variable] === undefined ? `${variable} to be set (${expected})` : expected);
}

/** `env` with `overrides` on top: what a role started by the CLI parses (a flag beats its variable). */
export function envWith(overrides: Env, env: Env = process.env): Env {
  return { ...env, ...overrides };
}
