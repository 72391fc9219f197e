import { existsSync } from 'node:fs';
import { FleetVenueControl } from '@tickfleet/budget';
import { createRedisConnection } from '@tickfleet/queues';
import { waitFor } from '@tickfleet/testkit';
import { FleetHarness } from '@tickfleet/testkit/fleet';

const DAY = 86_400_000;
const STORM_MS = 8000;
const SKEW_MS = 30_000;
const STATE_WAIT = { timeoutMs: 90_000 };
const LIBFAKETIME = [
  '/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1',
  '/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1',
  '/usr/lib/faketime/libfaketimeMT.so.1',
].find((p) => existsSync(p));

/**
 * A real `tickfleet worker` whose clock is 30 s off (libfaketime: the process's own Date.now())
 * meets a 429 storm on Binance: it reads the venue's Retry-After on its own clock, and the freeze
 * it writes fleet-wide must end when the storm ends on the host's clock, as in the freeze test
 * with an exact clock (freeze.int.test.ts). Before the venue control followed the fleet's
 * timeline, the worker 30 s ahead froze Binance 30 s past the storm, and the one behind wrote a
 * freeze already over (none).
 */
describe.each([
  ['ahead', SKEW_MS],
  ['behind', -SKEW_MS],
])('fleet: a worker whose clock is 30 s %s freezes a venue for the time the venue gave', (_label, skewMs) => {
  let fleet: FleetHarness;

  beforeAll(async () => {
    fleet = await FleetHarness.start({ venues: { binance: { latencyMs: 100, limit: { weight: 100_000, windowMs: 10_000 } } } });
  });
  afterAll(() => fleet.stop());

  it('ends the freeze with the storm on the host clock', async () => {
    if (!LIBFAKETIME) throw new Error('libfaketime is not installed (scripts/setup.sh installs it: apt-get install libfaketime)');
    await fleet.withStore(async (store) => {
      await store.connectors.upsert({
        venue: 'binance',
        baseUrl: fleet.mock.baseUrl('binance'),
        rateLimit: { limit: 100_000, periodMs: 10_000 },
        maxInflight: 2,
        freezeMs: 5000,
      });
    });
    const to = Math.floor(Date.now() / DAY) * DAY - DAY;
    await fleet.backfill('binance', 'BTC/USDT', '1m', to - 80 * DAY, to);
    const worker = fleet.spawn('worker', ['worker'], {
      LD_PRELOAD: LIBFAKETIME,
      FAKETIME: `${skewMs > 0 ? '+' : '-'}${Math.abs(skewMs) / 1000}s`,
      // Timers run on the monotonic clock: only the wall clock is off, as on a host with bad time sync.
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
    });
    await fleet.ready(worker);
    const redis = createRedisConnection(fleet.redis.url, { blocking: false });
    const control = new FleetVenueControl(redis, { prefix: fleet.prefix });
    try {
      await waitFor(() => fleet.mock.stats().venues.binance.requests > 10, 'binance traffic', STATE_WAIT);
      const stormStart = Date.now();
      const applied = fleet.mock.patchScenario({ venues: { binance: { stormForMs: STORM_MS } } });
      const stormEnd = applied.venues?.binance?.storm?.toMs ?? stormStart + STORM_MS;
      const frozen = await waitFor(() => control.freezeOf('binance'), 'binance frozen', STATE_WAIT);
      const recordSeenAt = Date.now();
      expect(frozen?.cause).toBe('429');
      // The bounds of freeze.int.test.ts: Retry-After counts whole seconds to the storm's end from
      // when the emulation answered, and the adapter snaps a retry near the window's end to it.
      expect(frozen!.untilMs).toBeGreaterThanOrEqual(stormEnd - 1000);
      expect(frozen!.untilMs).toBeLessThanOrEqual(stormEnd + (recordSeenAt - stormStart) + 2000);
      // The worker's clock really was off: the time on its freeze log line is the host's plus the skew.
      const line = await waitFor(
        () =>
          worker
            .output()
            .split('\n')
            .find((l) => l.includes('venue rate limited: frozen fleet-wide')),
        'the worker logged the freeze',
        STATE_WAIT,
      );
      const loggedAt = Date.parse((JSON.parse(line) as { time: string }).time) - skewMs;
      expect(loggedAt).toBeGreaterThanOrEqual(stormStart - 1000);
      expect(loggedAt).toBeLessThanOrEqual(Date.now() + 1000);
    } finally {
      redis.disconnect();
    }
    await fleet.stopCleanly(worker);
  }, 300_000);
});
