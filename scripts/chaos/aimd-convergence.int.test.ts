import { runAimdConvergence, type AimdPhaseResult } from './fixtures/aimd-run.js';

/**
 * The order-book design's AIMD against a venue whose limit the fleet does not know and which
 * tightens and loosens over time: Polymarket's CLOB as emulated (Cloudflare throttling: a request
 * beyond the limit waits in the venue's queue, up to `maxDelayMs`, and only then is refused with a
 * 429). The connector's budget is far above the limit, so only AIMD keeps the fleet in it, from
 * both of the design's signals: 429s halve the concurrency, and the p95 latency (the queue's wait)
 * is the early one: above `p95-high` one is subtracted, an increase needs it under `p95-low`, and
 * in between nothing changes. A venue whose only signal is a 429 (Limitless) cannot settle that
 * way: AIMD probes one step above every `stable` period and pays a few 429s each time, near zero
 * per 1,000 only with long periods, which `scripts/bench/aimd-convergence.ts` measures with the
 * default 30 s (docs/benchmarks/aimd.md).
 *
 * Phases (each ends after a number of requests counted by the emulation, not after a time):
 * loose (the fleet grows from its floor), tight (15 per s, refused beyond 700 ms of queueing: 429s
 * halve the concurrency, or on a loaded machine the latency brings it down first), loose again (it
 * grows back), tight again (10 per s with the venue's default 2 s queue: the latency alone brings
 * it down, never a 429). Time is compressed: a 1 s adjustment interval (the emulated limit's
 * window, so each observation sees a whole window's queueing) and a 1 s stable period.
 *
 * What is asserted is what holds on any machine, from the emulation's counters and the limit:
 * - the value moves the right way after every change, and no 429 where the queue absorbs the excess;
 * - settled (a phase's last requests): at most 5 429s per 1,000, and the tight phases use at least
 *   80 % of the limit (AIMD grows while the venue allows);
 * - under a limit of L per s, no settled value c has c / L above p95-high. With c units always in
 *   flight (the backlog is far above the limit) a unit takes c / (achieved rate) >= c / L on average
 *   (Little's law), so the p95 of a window is above p95-high too (the venue's queue spaces the
 *   waits evenly; a mean above it with a p95 under it would need waits beyond the 2 s queue) and
 *   AIMD subtracts one.
 * Not asserted: where in the band between p95-low and p95-high it stops (nothing changes there, by
 * design) nor that it stays within one step: CI runs failed that twice on a value still moving in a
 * short settled part, partly from AIMD closing its window every interval before it held minSamples
 * outcomes (fixed: packages/budget's AIMD tests, "judges a window only once it holds minSamples").
 */
describe('AIMD under an opaque limit that tightens and loosens', () => {
  it('settles after every change of the limit with 429s near zero: down on 429s or latency, up while the venue allows', async () => {
    const started = performance.now();
    const p95HighMs = 600;
    const { phases } = await runAimdConvergence({
      venue: 'polymarket',
      markets: 100, // 80 open markets: 160 order books, each polled once a second
      latencyMs: 50, // one slot answers 20 requests a second: the concurrency decides the rate
      maxInflight: 8,
      aimd: `min=2,interval=1s,stable=1s,p95-low=300ms,p95-high=${p95HighMs}ms`,
      settledShare: 0.3,
      phases: [
        { name: 'loose', limitPerSecond: 1000, requests: 900 },
        // 15 per s: 8 in flight use a window's 15 in at most a few hundred ms even on a loaded
        // machine, and the next ones would wait past 700 ms: refused. (At 30 per s a loaded machine
        // spent so long on each request that 8 in flight stayed under both 700 ms and p95-high, and
        // the value rightly stayed at 8; CI failed on that once.) 450 requests (30 s), the last
        // 225 settled: one 429 there is 4.4 per 1,000.
        { name: 'tight', limitPerSecond: 15, requests: 450, maxDelayMs: 700, settledShare: 0.5 },
        { name: 'loose again', limitPerSecond: 1000, requests: 900 },
        // 10 per s: 8 or 7 in flight wait 800 or 700 ms on average, above p95-high, and at most
        // 800 ms, inside the venue's 2 s queue. 300 requests (30 s).
        { name: 'tight again', limitPerSecond: 10, requests: 300 },
      ],
      log: (line) => process.stdout.write(`${line}\n`),
    });
    process.stdout.write(`AIMD convergence test: ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
    const [loose, tight, looseAgain, tightAgain] = phases as [AimdPhaseResult, AimdPhaseResult, AimdPhaseResult, AimdPhaseResult];
    const settled = (p: AimdPhaseResult) => p.settled!.concurrency;

    // Settled: the venue refuses next to nothing (the figures are in the phase lines above).
    for (const p of phases) expect({ phase: p.name, atMost5per1000: p.settled!.per1000 <= 5 }).toEqual({ phase: p.name, atMost5per1000: true });
    // Each change moved the value the right way from where it stood when the limit changed (a
    // phase's first sample): up when the limit loosened, down when it tightened.
    const atChange = (p: AimdPhaseResult) => p.concurrency[0]!;
    // Loose: started at the floor (no value yet, or 2), grew, and no request was refused.
    expect(atChange(loose)).toBeLessThanOrEqual(2);
    expect(Math.min(...settled(loose))).toBeGreaterThan(2);
    expect(loose.responses429).toBe(0);
    // Tightened below what the fleet sent: it settled lower. Which signal brought it down first
    // depends on the machine: usually 429s (the venue refuses beyond 700 ms of queueing and each
    // 429 halves the value), but on a loaded machine the p95 crosses 600 ms before any request
    // waits 700 ms and the latency alone does it (seen once in CI with a core kept busy). Halving
    // on 429s is asserted exactly in packages/budget's AIMD tests.
    expect(Math.max(...settled(tight))).toBeLessThan(atChange(tight));
    // Loosened: it grew back, without a 429.
    expect(looseAgain.responses429).toBe(0);
    expect(Math.min(...settled(looseAgain))).toBeGreaterThan(atChange(looseAgain));
    // Tightened again within the venue's queue: the latency alone brought the value down; never a 429.
    expect(tightAgain.responses429).toBe(0);
    expect(Math.max(...settled(tightAgain))).toBeLessThan(atChange(tightAgain));
    // ... to where the mean wait c / L is no longer above p95-high (c <= 6 at 10 per s).
    expect(Math.max(...settled(tightAgain))).toBeLessThanOrEqual(Math.floor((p95HighMs / 1000) * tightAgain.limitPerSecond));
    // The tight phases use the venue: settled, at least 80 % of its limit answered.
    for (const p of [tight, tightAgain])
      expect({ phase: p.name, usesTheLimit: p.settled!.achievedPerSecond >= 0.8 * p.limitPerSecond }).toEqual({ phase: p.name, usesTheLimit: true });
  }, 240_000);
});
