import { runAimdConvergence } from './fixtures/aimd-run.js';

/**
 * The order-book design's AIMD against a venue whose limit the fleet does not know (Limitless: no
 * published quota, a 429 is the only signal). The connector's budget is far above the emulation's
 * limit, so only AIMD keeps the fleet under it. Loose first: the concurrency starts at the floor
 * and grows (no 429); then the limit tightens to 10 requests/s: 429s halve the concurrency, it
 * settles below where it was, and 429s stay a small share of the requests. Time is compressed
 * (1 s adjustment interval, 2 s stable period); `scripts/bench/aimd-convergence.ts` measures the
 * same with the default 30 s periods and reports 429s per 1,000 requests (docs/benchmarks/aimd.md).
 */
describe('AIMD under an opaque limit that tightens', () => {
  it('starts at the floor, grows while the venue allows, halves on 429s and settles under the new limit', async () => {
    const { phases } = await runAimdConvergence({
      markets: 24,
      latencyMs: 500,
      maxInflight: 8,
      aimd: 'min=1,interval=1s,stable=2s,p95-low=3s,p95-high=10s',
      phases: [
        { name: 'loose', limitPerSecond: 1000, requests: 40 },
        { name: 'tight', limitPerSecond: 10, requests: 90 },
      ],
      log: (line) => process.stdout.write(`${line}\n`),
    });
    const [loose, tight] = phases as [(typeof phases)[0], (typeof phases)[0]];
    // Started at the floor (no value yet, or 1) and grew.
    expect(loose.concurrency[0]! <= 1).toBe(true);
    expect(Math.max(...loose.concurrency)).toBeGreaterThan(2);
    expect(loose.responses429).toBe(0);
    // Tightened: the venue refused some, the concurrency came down from where it was.
    expect(tight.responses429).toBeGreaterThan(0);
    expect(Math.min(...tight.concurrency)).toBeLessThan(Math.max(...loose.concurrency));
    expect(tight.responses429 / tight.requests).toBeLessThan(0.25);
  }, 240_000);
});
