import type { ChunkRange } from '../state-store.js';

/** `ranges` sorted and merged where they touch or overlap; empty ones dropped. */
export function mergeRanges(ranges: readonly ChunkRange[]): ChunkRange[] {
  const sorted = ranges.filter((r) => r.toMs > r.fromMs).sort((a, b) => a.fromMs - b.fromMs || a.toMs - b.toMs);
  const out: ChunkRange[] = [];
  for (const r of sorted) {
    const last = out[out.length - 1];
    if (last && r.fromMs <= last.toMs) last.toMs = Math.max(last.toMs, r.toMs);
    else out.push({ fromMs: r.fromMs, toMs: r.toMs });
  }
  return out;
}
