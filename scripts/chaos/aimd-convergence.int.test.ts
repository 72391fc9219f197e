import { runAimdConvergence, type AimdPhaseResult } from './fixtures/aimd-run.js';

/**
 * The order-book design's AIMD against a venue whose limit the fleet does not know and which
 * tightens and loosens over time: Polymarket's CLOB as emulated (Cloudflare throttling: a request
 * beyond the limit waits in the venue's queue, up to `maxDelayMs`, and only then is refused with a
 * 429). The connector's budget is far above the limit, so only AIMD keeps the fleet in it, from
 * both of the design's signals: 429s halve the concurrency, and the p95 latency (the queue's wait)
 * is the early one: above `p95-high` one is subtracted, an increase needs it under `p95-low`, and
 * in between nothing changes, which is what lets the value settle. A venue whose only signal is a
 * 429 (Limitless) cannot settle that way: AIMD probes one step above every `stable` period and pays
 * a few 429s each time, near zero per 1,000 only with long periods, which
 * `scripts/bench/aimd-convergence.ts` measures with the default 30 s (docs/benchmarks/aimd.md).
 *
 * Phases (each ends after a number of requests counted by the emulation, not after a time):
 * loose (the fleet grows from its floor), tight (30 per s, refused beyond 700 ms of queueing: 429s
 * halve the concurrency, or on a loaded machine the latency brings it down first; it settles), loose again (it grows back), tight again (15 per s with the
 * venue's default 2 s queue: the latency alone brings it down). The settled part of a phase is its
 * last 30 % of requests: there the AIMD value stays within one step and 429s are near zero. Time is
 * compressed: a 1 s adjustment interval (the emulated limit's window, so each observation sees a
 * whole window's queueing) and a 1 s stable period.
 */
describe('AIMD under an opaque limit that tightens and loosens', () => {
  it('settles after every change of the limit with 429s near zero: down on 429s or latency, up while the venue allows', async () => {
    const started = performance.now();
    const { phases } = await runAimdConvergence({
      venue: 'polymarket',
      markets: 100, // 80 open markets: 160 order books, each polled once a second
      latencyMs: 50, // one slot answers 20 requests a second: the concurrency decides the rate
      maxInflight: 8,
      aimd: 'min=2,interval=1s,stable=1s,p95-low=300ms,p95-high=600ms',
      settledShare: 0.3,
      phases: [
        { name: 'loose', limitPerSecond: 1000, requests: 900 },
        { name: 'tight', limitPerSecond: 30, requests: 270, maxDelayMs: 700 },
        { name: 'loose again', limitPerSecond: 1000, requests: 900 },
        // 15 per s, not 25. At 25 per s the floor's two slots, on a machine with a core kept busy
        // (about 84 ms per book unit), sent about the limit, so intervals without queueing (p95
        // under p95-low) raised the value 2 -> 3 -> 4 within the settled part (a CI run). At 15 per
        // s a raise needs units slower than 133 ms for a whole interval. 450 requests (30 s): the
        // descent took up to 230 requests in runs with a core kept busy; the settled part starts
        // at 315.
        { name: 'tight again', limitPerSecond: 15, requests: 450 },
      ],
      log: (line) => process.stdout.write(`${line}\n`),
    });
    process.stdout.write(`AIMD convergence test: ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
    const [loose, tight, looseAgain, tightAgain] = phases as [AimdPhaseResult, AimdPhaseResult, AimdPhaseResult, AimdPhaseResult];
    const settled = (p: AimdPhaseResult) => p.settled!.concurrency;

    // Settled: the fleet-wide value stays within one step, and the venue refuses next to nothing
    // (the figures are in the phase lines above).
    for (const p of phases) {
      expect({ phase: p.name, withinOneStep: Math.max(...settled(p)) - Math.min(...settled(p)) <= 1, atMost5per1000: p.settled!.per1000 <= 5 }).toEqual({
        phase: p.name,
        withinOneStep: true,
        atMost5per1000: true,
      });
    }
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
  }, 240_000);
});
