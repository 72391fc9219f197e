import { WaitTimeoutError } from './testkit-error.js';

/** Polls `predicate` until it returns a truthy value or `timeoutMs` passes (then throws naming `what`). */
export async function waitFor<T>(
  predicate: () => Promise<T> | T,
  what: string,
  { timeoutMs = 20_000, intervalMs = 50 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await predicate();
      if (v) return v as NonNullable<T>;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new WaitTimeoutError(what, timeoutMs, `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
}
