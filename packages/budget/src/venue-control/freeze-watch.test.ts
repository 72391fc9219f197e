import { Redis } from 'ioredis';
import { ManualClock, startRedis, waitFor, type TestRedis } from '@tickfleet/testkit';
import { FleetVenueControl } from './fleet-venue-control.js';
import { FreezeWatch } from './freeze-watch.js';

let redis: TestRedis;
const clients: Redis[] = [];
const client = (): Redis => {
  const c = new Redis(redis.url);
  clients.push(c);
  return c;
};

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  for (const c of clients) c.disconnect();
  await redis.stop();
});

/** Commands of one kind Redis has served so far (ground truth for whether a check read Redis). */
async function calls(command: string): Promise<number> {
  const stats = await clients[0]!.info('commandstats');
  return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
}

function setup(refreshMs = 600_000) {
  const prefix = redis.namespace();
  const clock = new ManualClock(Date.now());
  const mine = new FleetVenueControl(client(), { prefix, clock });
  const other = new FleetVenueControl(client(), { prefix, clock });
  const subscriber = client();
  const watch = new FreezeWatch(mine, subscriber, { prefix, clock, refreshMs });
  return { prefix, clock, mine, other, subscriber, watch };
}

describe('FreezeWatch', () => {
  it('reads a venue once, then answers from what it kept until a change is announced', async () => {
    const { clock, other, watch } = setup();
    await watch.start();
    expect(await watch.frozenForMs('binance')).toBe(0);
    const hmgets = await calls('hmget');
    for (let i = 0; i < 50; i++) expect(await watch.frozenForMs('binance')).toBe(0);
    expect(await calls('hmget')).toBe(hmgets);

    // Another worker freezes the venue: the announcement makes this one read it again.
    await other.freeze('binance', clock.now() + 30_000, '429');
    await waitFor(async () => (await watch.frozenForMs('binance')) === 30_000, 'the freeze seen through its announcement', { timeoutMs: 60_000 });
    // The freeze ends by the clock alone, without another read.
    const after = await calls('hmget');
    clock.advance(30_000);
    expect(await watch.frozenForMs('binance')).toBe(0);
    expect(await calls('hmget')).toBe(after);
    await watch.stop();
  });

  it('reads Redis on every check while its subscription is down, and forgets what it kept when it comes back', async () => {
    const { clock, other, watch, subscriber } = setup();
    await watch.start();
    expect(await watch.frozenForMs('kraken')).toBe(0);
    // The subscriber's connection is cut: announcements made now are lost.
    await clients[0]!.client('KILL', 'TYPE', 'pubsub');
    await waitFor(() => subscriber.status !== 'ready', 'the subscriber disconnected', { timeoutMs: 60_000 });
    await other.freeze('kraken', clock.now() + 5000, 'manual');
    // Until it is subscribed again, a check reads the record itself.
    await waitFor(async () => subscriber.status === 'ready' || (await watch.frozenForMs('kraken')) === 5000, 'the freeze seen while unsubscribed', {
      timeoutMs: 60_000,
    });
    await waitFor(() => subscriber.status === 'ready', 'the subscriber back', { timeoutMs: 60_000 });
    expect(await watch.frozenForMs('kraken')).toBe(5000);
    await watch.stop();
  });

  it('reads again after refreshMs even without an announcement', async () => {
    const { clock, watch, prefix } = setup(1000);
    await watch.start();
    expect(await watch.frozenForMs('binance')).toBe(0);
    // A freeze written without an announcement (a writer that is not FleetVenueControl).
    await clients[0]!.hset(`${prefix}:venue:{binance}:control`, 'fu', String(clock.now() + 10_000), 'fc', 'manual');
    expect(await watch.frozenForMs('binance')).toBe(0);
    clock.advance(1000);
    expect(await watch.frozenForMs('binance')).toBe(9000);
    await watch.stop();
  });
});
