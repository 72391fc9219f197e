import type { z } from 'zod';
import { ValidationError } from './errors/validation-error.js';

/**
 * Parses `value` with `schema`, turning the first zod issue into a ValidationError that names
 * the field path (prefixed by `what`) and what was expected.
 */
export function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown, what: string): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const path = issue && issue.path.length > 0 ? `${what}.${issue.path.join('.')}` : what;
  // Schema messages often start with "expected …" themselves; ValidationError adds its own.
  // A plain argument is echoed back (an object may carry secrets, and its path says enough).
  const received = typeof value === 'string' || typeof value === 'number' ? value : undefined;
  throw new ValidationError(path, (issue?.message ?? 'a valid value').replace(/^expected\s+/i, ''), received);
}
