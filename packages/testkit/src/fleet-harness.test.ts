import { FleetHarness, warningLines } from './fleet-harness.js';
import { FixtureError } from './testkit-error.js';

const DAY = 86_400_000;

describe('warningLines', () => {
  it('keeps the warn and error lines of pino JSON output, in order', () => {
    const lines = [
      '{"level":"info","msg":"worker ready"}',
      '{"level":"warn","venue":"polygon","msg":"venue answered 429"}',
      'not json at all',
      '{"level":"error","msg":"sink unavailable"}',
      '{"level":"debug","msg":"warn in the message only"}',
    ];
    expect(warningLines(lines.join('\n'))).toEqual([lines[1], lines[3]]);
  });
});

/**
 * `FleetHarness.backfillDone`, which the fleet tests wait on: a backfill that ends failed stops
 * the wait at once, and one that never ends times out; both name the backfill's counts. A real
 * fleet (redis-server, emulations, SQLite store) with no worker running, so nothing but the test
 * moves the backfills.
 */
describe('FleetHarness.backfillDone', () => {
  let fleet: FleetHarness;
  const to = Math.floor(Date.now() / DAY) * DAY - DAY;
  beforeAll(async () => {
    fleet = await FleetHarness.start();
    await fleet.upsertConnector('binance', '--limit', '1200', '--period', '1m');
  }, 60_000);
  afterAll(() => fleet?.stop());

  const backfill = async (symbol: string): Promise<{ id: string; unitsTotal: number }> =>
    JSON.parse(await fleet.backfill('binance', symbol, '1m', to - DAY, to, '--json')) as { id: string; unitsTotal: number };

  it('returns the backfill once every chunk is done', async () => {
    const { id, unitsTotal } = await backfill('BTC/USDT');
    await fleet.withStore(async (store) => {
      for (const chunk of await store.backfills.chunks(id)) await store.backfills.chunkDone(id, chunk);
    });
    await expect(fleet.backfillDone(id)).resolves.toMatchObject({ id, status: 'done', unitsDone: unitsTotal, unitsFailed: 0 });
  });

  it('fails at once when the backfill ends failed, naming its counts', async () => {
    const { id, unitsTotal } = await backfill('ETH/USDT');
    await fleet.withStore(async (store) => {
      for (const chunk of await store.backfills.chunks(id)) await store.backfills.chunkFailed(id, chunk, 'test: the venue refused it');
    });
    // A timeout far beyond the test's own: only the failed status can end the wait in time.
    const err = await fleet.backfillDone(id, 'eth backfill done', { timeoutMs: 600_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FixtureError);
    expect((err as Error).message).toContain(
      `eth backfill done: the backfill ended failed; backfill {"status":"failed","unitsTotal":${unitsTotal},"unitsDone":0`,
    );
  });

  it('times out on a backfill that never ends, naming its counts and what else the test adds', async () => {
    const { id, unitsTotal } = await backfill('SOL/USDT');
    const err = await fleet.backfillDone(id, 'sol backfill done', { timeoutMs: 1000, detail: () => 'no worker running' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FixtureError);
    expect((err as Error).message).toMatch(/^timed out after 1000 ms waiting for sol backfill done; backfill \{"status":"(pending|running)"/);
    expect((err as Error).message).toContain(`"unitsTotal":${unitsTotal},"unitsDone":0,"unitsFailed":0}; no worker running; last warnings:\n(none)`);
  });
});
