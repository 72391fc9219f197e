/**
 * A duration as the CLI prints it (core's formatDurationMs, which the page may not import: browser
 * code imports only types from outside src/client): `250ms`, `1.5s`, `1m30s`, `11d22h6m40s`; `-`
 * when unknown. apps/dashboard/src/client-duration.test.ts checks both on one table of values.
 */
export function dur(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '-';
  if (ms < 1000) return Math.round(ms) + 'ms';
  if (ms < 60000) return (ms / 1000).toFixed(ms % 1000 === 0 ? 0 : 1) + 's';
  let rest = Math.round(ms / 1000);
  const parts: string[] = [];
  for (const [unit, size] of [
    ['d', 86400],
    ['h', 3600],
    ['m', 60],
    ['s', 1],
  ] as const) {
    const n = Math.floor(rest / size);
    rest -= n * size;
    if (n) parts.push(n + unit);
  }
  return parts.join('') || '0s';
}
