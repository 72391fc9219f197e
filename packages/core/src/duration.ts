const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/**
 * Parses a duration such as `500ms`, `10s`, `1m`, `2h`, `1d` or a bare number of milliseconds.
 * Returns undefined for anything else so callers can name the bad argument in their error.
 */
export function parseDurationMs(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d|w)?$/.exec(text.trim());
  if (!m) return undefined;
  const value = Number(m[1]) * (UNITS[m[2] ?? 'ms'] ?? 1);
  return Number.isFinite(value) ? Math.round(value) : undefined;
}

/**
 * Formats milliseconds compactly: 1500 -> "1.5s", 90000 -> "1m30s", and from a day on with days,
 * 1_030_000_000 -> "11d22h6m40s" (the CLI and the dashboard print durations alike; the dashboard's
 * page has its own copy, apps/dashboard/src/client/duration.ts, checked against this one).
 */
export function formatDurationMs(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms % 1000 === 0 ? 0 : 1)}s`;
  const totalS = Math.round(ms / 1000);
  const d = Math.floor(totalS / 86_400);
  const h = Math.floor((totalS % 86_400) / 3600);
  const m = Math.floor((totalS % 3600) / 60);
  const s = totalS % 60;
  return `${d ? `${d}d` : ''}${h ? `${h}h` : ''}${m ? `${m}m` : ''}${s ? `${s}s` : ''}` || '0s';
}
