import { waitFor } from '@tickfleet/testkit';
import { FleetHarness } from '@tickfleet/testkit/fleet';

interface Persistence {
  sink: string;
  sinkRetry: { maxRetries: number; retryBaseMs: number; failuresForDegraded: number };
  spool: { maxSegmentBytes: number };
  dedup: { enabled: boolean; windowMs?: number; maxKeys?: number; keys?: number; dropped?: number };
}

/**
 * A worker's persistence settings come from its environment and `/healthz` reports them as the
 * running pipeline has them: the sink's retries, the spool's segment size, and the dedup window
 * with the keys it holds and the repeats it dropped. Finnhub option chains fetched again within
 * the emulation's quote minute are the same snapshot (the same record keys), so every cycle after
 * the first is a repeat the window drops before it reaches the sink.
 */
describe('fleet: persistence settings of a worker', () => {
  let fleet: FleetHarness;
  beforeAll(async () => {
    fleet = await FleetHarness.start({ venues: { finnhub: { limit: { requests: 6000 } } } });
  });
  afterAll(() => fleet.stop());

  it('runs with the configured retries, segment size and dedup window, and reports the window as it is', async () => {
    await fleet.upsertConnector('finnhub', '--limit', '6000', '--period', '60s', '--max-inflight', '2');
    await fleet.ok('universes', 'set', 'finnhub', 'pair', 'U00', 'U01');
    await fleet.ok('jobs', 'add', 'finnhub', 'options', '@pair', '--per-cycle', '2');
    const scheduler = fleet.spawn('scheduler', ['scheduler'], { TICKFLEET_SCHEDULER_TICK_MS: '200', TICKFLEET_SCHEDULER_OPTIONS_EVERY_MS: '1000' });
    const worker = fleet.spawn('worker', ['worker'], {
      FINNHUB_API_KEY: 'test-finnhub-key',
      TICKFLEET_DEDUP: 'on',
      TICKFLEET_DEDUP_WINDOW_MS: '10m',
      TICKFLEET_DEDUP_MAX_KEYS: '50000',
      TICKFLEET_SINK_MAX_RETRIES: '5',
      TICKFLEET_SINK_RETRY_BASE_MS: '250ms',
      TICKFLEET_SINK_FAILURES_FOR_DEGRADED: '7',
      TICKFLEET_SPOOL_MAX_SEGMENT_BYTES: '65536',
    });
    await fleet.ready(worker);
    const port = await waitFor(() => /"healthPort":(\d+)/.exec(worker.output())?.[1], 'the worker health port');
    const persistence = async (): Promise<Persistence> =>
      ((await (await fetch(`http://127.0.0.1:${port}/healthz`)).json()) as { persistence: Persistence }).persistence;

    // Repeated chains reach the worker: the window drops them.
    await waitFor(async () => ((await persistence()).dedup.dropped ?? 0) > 0, 'repeats dropped by the dedup window', { timeoutMs: 60_000, intervalMs: 250 });
    await fleet.stopCleanly(scheduler);
    // Everything queued has run (the queue is the ground truth of what the worker still has to store).
    await waitFor(
      async () => {
        const status = JSON.parse(await fleet.ok('status', '--json')) as {
          venues: Array<{ venue: string; queue: { waiting: number; prioritized: number; active: number; delayed: number } }>;
        };
        const q = status.venues.find((v) => v.venue === 'finnhub')!.queue;
        return q.waiting + q.prioritized + q.active + q.delayed === 0;
      },
      'the finnhub queue drained',
      { timeoutMs: 60_000, intervalMs: 250 },
    );

    const p = await persistence();
    expect(p).toMatchObject({
      sink: 'ok',
      sinkRetry: { maxRetries: 5, retryBaseMs: 250, failuresForDegraded: 7 },
      spool: { maxSegmentBytes: 65_536 },
      dedup: { enabled: true, windowMs: 600_000, maxKeys: 50_000 },
    });
    // The window holds the key of every record this worker stored, and nothing else.
    const stored = await fleet.withSink((sink) => sink.reader!.countEnvelopes({ venue: 'finnhub', channel: 'options' }));
    expect(stored).toBeGreaterThan(0);
    expect(p.dedup.keys).toBe(stored);
    // What it dropped is what /metrics counts for the venue and channel.
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const counted = /^tickfleet_dedup_dropped_total\{(?=[^}]*venue="finnhub")(?=[^}]*channel="options")[^}]*\} (\d+)$/m.exec(metrics)?.[1];
    expect(Number(counted)).toBe(p.dedup.dropped);
    await fleet.stopCleanly(worker);
  }, 180_000);
});
