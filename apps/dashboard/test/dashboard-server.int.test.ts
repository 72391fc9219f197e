import { UnrecoverableError, Worker } from 'bullmq';
import { ConfigError } from '@tickfleet/core';
import { createRedisConnection } from '@tickfleet/queues';
import { publishStreamLive, StreamLeases, streamLiveKey, type StreamLiveState } from '@tickfleet/streams';
import { startRedis, tempDir, waitFor, type TempDir, type TestRedis } from '@tickfleet/testkit';
import { DashboardServer, runDashboard, type DashboardServerOptions, type FleetStatus, type StreamStatus } from '../src/index.js';
import { connector, liveUnits, openTestFleet, startDashboard, type TestFleet } from './fleet-fixture.js';

let redis: TestRedis;
let dir: TempDir;
let fleet: TestFleet;
const servers: DashboardServer[] = [];

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis.stop();
});
beforeEach(async () => {
  dir = tempDir();
  fleet = await openTestFleet(redis.url, redis.namespace(), dir, Date.now());
  await fleet.store.connectors.upsert(connector('binance', 1200));
  await fleet.store.connectors.upsert(connector('polygon', 5, { maxInflight: 2 }));
  await fleet.queues.enqueue([...liveUnits('binance', 'BTC/USDT', 3, fleet.now), ...liveUnits('polygon', 'AAPL', 1, fleet.now)]);
});
afterEach(async () => {
  for (const s of servers.splice(0)) await s.stop();
  await fleet.close();
  dir.remove();
});

async function serve(options: Partial<DashboardServerOptions> = {}): Promise<DashboardServer> {
  const server = await startDashboard(fleet, options);
  servers.push(server);
  return server;
}

/** Fails one binance unit for real: a BullMQ worker takes it and fails it as unrecoverable. */
async function failOneUnit(): Promise<string> {
  const connection = createRedisConnection(redis.url);
  const worker = new Worker(fleet.queues.queue('binance').name, null, { connection, prefix: fleet.prefix, autorun: false });
  try {
    const token = 'test-token';
    const job = await worker.getNextJob(token);
    if (!job?.id) throw new Error('no unit to fail');
    await job.moveToFailed(new UnrecoverableError('venue said no'), token, false);
    expect(await job.getState()).toBe('failed');
    return job.id;
  } finally {
    await worker.close();
    await connection.quit();
  }
}

const retryPath = (id: string): string => `/queues/api/queues/${encodeURIComponent('{binance}')}/${encodeURIComponent(id)}/retry`;

describe('DashboardServer', () => {
  it('serves the overview page, /api/status, /metrics, /healthz and /readyz', async () => {
    const server = await serve();
    const page = await fetch(`${server.url}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const html = await page.text();
    // The page's script is a module the dashboard built from src/client/overview.ts at start (esbuild
    // writes strings with double quotes); its settings are data in the page.
    expect(html).toContain('<script type="module" src="assets/overview.js"></script>');
    const script = await fetch(`${server.url}/assets/overview.js`);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(await script.text()).toContain('fetch("api/status"');
    const config = /<script type="application\/json" id="overview-config">(.*?)<\/script>/.exec(html)?.[1];
    expect(JSON.parse(config ?? 'null')).toEqual({ queuesPath: '/queues', refreshMs: 2000, historyRefreshMs: 5000, historyIntervalMs: 5000, readOnly: true });

    const res = await fetch(`${server.url}/api/status`);
    expect(res.status).toBe(200);
    const status = (await res.json()) as FleetStatus;
    expect(status.venues.map((v) => [v.venue, v.status, v.runnable, v.queue.prioritized])).toEqual([
      ['binance', 'active', 3, 3],
      ['polygon', 'active', 1, 1],
    ]);
    expect(status.spool).toMatchObject({ dir: fleet.spoolDir, segments: 0, bytes: 0 });

    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toMatch(/tickfleet_venue_runnable_units\{venue="binance",role="dashboard"\} 3/);
    expect(metrics).toMatch(/tickfleet_queue_units\{venue="polygon",state="prioritized",role="dashboard"\} 1/);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ok', checks: { store: 'ok', redis: 'ok' } });
    server.setDraining();
    expect((await fetch(`${server.url}/readyz`)).status).toBe(503);
  });

  it('shows every stream with its lease holder, the live state it published and its unhealed trade gaps on the ledger', async () => {
    const { store, redis: client, prefix, now } = fleet;
    const majors = await store.streams.upsert({ name: 'majors', venue: 'binance', symbols: ['BTC/USDT', 'ETH/USDT'], channels: ['trades', 'book'] });
    await store.streams.upsert({ name: 'kraken-pairs', venue: 'kraken', symbols: ['BTC/USD'], enabled: false });
    // A worker's lease, taken by a real lease cycle (a long TTL: the test must not race its expiry).
    const leases = new StreamLeases(client, 'worker-a', { prefix, ttlMs: 120_000 });
    leases.setStreams(['majors'], await store.streams.streamsVersion());
    const [taken] = (await leases.tick()).acquired;
    expect(taken?.name).toBe('majors');
    const live: StreamLiveState = {
      name: 'majors',
      venue: 'binance',
      worker: 'worker-a',
      token: taken!.token,
      state: 'live',
      connectedSince: new Date(now - 60_000).toISOString(),
      messages: 1234,
      reconnects: 2,
      gapsFound: 5,
      gapsHealed: 3,
      gapsUnhealed: 2,
      resyncs: 1,
      checksumMismatches: 0,
      garbledFrames: 0,
      lastMessageAgeMs: 40,
      recordsDelivered: 1200,
      stored: 1190,
      duplicates: 10,
      timeQuality: { skewP50Ms: 12, skewP99Ms: 85, outOfOrder: 0 },
      updatedAt: now,
    };
    await publishStreamLive(client, prefix, live, 120_000);
    // The two holes the holder could not heal, one filled later, and gaps the streams do not own.
    await store.gaps.record({ jobId: 'binance:BTC/USDT:-:trades', fromMs: 100, toMs: 150, kind: 'trade-ids' }, now - 2000);
    await store.gaps.record({ jobId: 'binance:ETH/USDT:-:trades', fromMs: 7, toMs: 9, kind: 'trade-ids' }, now - 1000);
    await store.gaps.record({ jobId: 'binance:ETH/USDT:-:trades', fromMs: 20, toMs: 30, kind: 'trade-ids' }, now);
    await store.gaps.markFilled('binance:ETH/USDT:-:trades', 20, 30, now);
    await store.gaps.record({ jobId: 'binance:SOL/USDT:-:trades', fromMs: 1, toMs: 2, kind: 'trade-ids' }, now);
    await store.gaps.record({ jobId: 'binance:BTC/USDT:1m:ohlcv', fromMs: 0, toMs: 60_000 }, now);

    const server = await serve();
    const status = (await (await fetch(`${server.url}/api/status`)).json()) as FleetStatus;
    const { symbols: _symbols, ...definition } = majors;
    expect(status.streams).toEqual<StreamStatus[]>([
      {
        name: 'kraken-pairs',
        venue: 'kraken',
        symbolCount: 1,
        channels: ['trades'],
        bookDepth: null,
        enabled: false,
        version: expect.any(Number) as number,
        createdAt: expect.any(Number) as number,
        updatedAt: expect.any(Number) as number,
        holder: null,
        live: null,
        unhealedGaps: 0,
        gaps: [],
      },
      {
        ...definition,
        symbolCount: 2,
        holder: { worker: 'worker-a', token: taken!.token, acquiredAt: expect.any(Number) as number, expiresAt: expect.any(Number) as number },
        live,
        unhealedGaps: 2,
        gaps: [
          { symbol: 'ETH/USDT', jobId: 'binance:ETH/USDT:-:trades', fromId: 7, toId: 9, detectedAt: now - 1000 },
          { symbol: 'BTC/USDT', jobId: 'binance:BTC/USDT:-:trades', fromId: 100, toId: 150, detectedAt: now - 2000 },
        ],
      },
    ]);
    // The page draws them from the same JSON.
    expect(await (await fetch(`${server.url}/`)).text()).toContain('<table id="streams">');

    // The holder goes (SIGTERM: its leases released, its live key removed): the stream stays listed, unheld.
    await leases.releaseAll();
    await client.del(streamLiveKey(prefix, 'majors'));
    const after = (await (await fetch(`${server.url}/api/status`)).json()) as FleetStatus;
    expect(after.streams?.find((s) => s.name === 'majors')).toMatchObject({ holder: null, live: null, unhealedGaps: 2 });
    // A value that is not a live state (another writer's, a truncated one) reads as none, not as a failed page.
    await client.set(streamLiveKey(prefix, 'majors'), JSON.stringify({ name: 'majors', state: 'live' }));
    const res = await fetch(`${server.url}/api/status`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as FleetStatus).streams?.find((s) => s.name === 'majors')?.live).toBeNull();
  });

  it('lists every venue queue in bull-board and picks up a venue added after start', async () => {
    const server = await serve();
    const names = async (): Promise<string[]> => {
      const body = (await (await fetch(`${server.url}/queues/api/queues`)).json()) as { queues: Array<{ name: string }> };
      return body.queues.map((q) => q.name).sort();
    };
    expect(await names()).toEqual(['{binance}', '{polygon}']);
    const listed = (await (await fetch(`${server.url}/queues/api/queues`)).json()) as { queues: Array<{ readOnlyMode: boolean; displayName?: string }> };
    expect(listed.queues.map((q) => [q.displayName, q.readOnlyMode]).sort()).toEqual([
      ['binance', true],
      ['polygon', true],
    ]);
    const ui = await fetch(`${server.url}/queues`);
    expect(ui.status).toBe(200);
    expect(await ui.text()).toContain('tickfleet queues');

    await fleet.store.connectors.upsert(connector('kraken', 10));
    await waitFor(async () => (await names()).includes('{kraken}'), 'kraken on the board', { timeoutMs: 60_000 });
    expect(server.board.venues()).toEqual(['binance', 'kraken', 'polygon']);
  });

  it('is read-only by default: a retry is refused and the unit stays failed', async () => {
    const failedId = await failOneUnit();
    const server = await serve();
    const res = await fetch(`${server.url}${retryPath(failedId)}`, { method: 'PUT' });
    expect(res.status).toBe(403);
    const clean = await fetch(`${server.url}/queues/api/queues/${encodeURIComponent('{binance}')}/clean/failed`, { method: 'PUT' });
    expect(clean.status).toBe(403);
    expect((await fleet.queues.counts('binance')).failed).toBe(1);
    expect(await fleet.queues.queue('binance').getJobState(failedId)).toBe('failed');
  });

  it('allows job actions with --allow-actions and a token, and refuses them without', async () => {
    const failedId = await failOneUnit();
    const server = await serve({ allowActions: true, credentials: { token: 's3cret' } });
    expect((await fetch(`${server.url}${retryPath(failedId)}`, { method: 'PUT' })).status).toBe(401);
    expect((await fetch(`${server.url}${retryPath(failedId)}`, { method: 'PUT', headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    expect((await fetch(`${server.url}/api/status`)).status).toBe(401);
    expect(await fleet.queues.queue('binance').getJobState(failedId)).toBe('failed');

    const ok = await fetch(`${server.url}${retryPath(failedId)}`, { method: 'PUT', headers: { authorization: 'Bearer s3cret' } });
    expect(ok.status).toBeLessThan(300);
    expect(['waiting', 'prioritized']).toContain(await fleet.queues.queue('binance').getJobState(failedId));

    // A ?token= link signs the browser in with a cookie the board's own API calls carry.
    const viaQuery = await fetch(`${server.url}/?token=s3cret`);
    expect(viaQuery.status).toBe(200);
    const cookie = viaQuery.headers.get('set-cookie')!.split(';')[0]!;
    expect((await fetch(`${server.url}/queues/api/queues`, { headers: { cookie } })).status).toBe(200);
    // Health and metrics stay open for probes and Prometheus.
    expect((await fetch(`${server.url}/metrics`)).status).toBe(200);
  });

  it('accepts basic auth from TICKFLEET_DASHBOARD_USER / _PASSWORD', async () => {
    const failedId = await failOneUnit();
    const server = await serve({ allowActions: true, credentials: { user: 'ops', password: 'pw' } });
    const denied = await fetch(`${server.url}${retryPath(failedId)}`, {
      method: 'PUT',
      headers: { authorization: `Basic ${Buffer.from('ops:nope').toString('base64')}` },
    });
    expect(denied.status).toBe(401);
    expect(denied.headers.get('www-authenticate')).toMatch(/^Basic/);
    const ok = await fetch(`${server.url}${retryPath(failedId)}`, {
      method: 'PUT',
      headers: { authorization: `Basic ${Buffer.from('ops:pw').toString('base64')}` },
    });
    expect(ok.status).toBeLessThan(300);
  });

  it('refuses to start with actions enabled and no credentials, naming the variable', async () => {
    expect(() => new DashboardServer({ redis: fleet.redis, store: fleet.store, allowActions: true })).toThrow(ConfigError);
    const env = { REDIS_URL: redis.url, TICKFLEET_STORE_URL: fleet.storeUrl, TICKFLEET_DASHBOARD_PORT: '0', TICKFLEET_DASHBOARD_ALLOW_ACTIONS: '1' };
    await expect(runDashboard(env, { handleSignals: false })).rejects.toMatchObject({ code: 'E_CONFIG', variable: 'TICKFLEET_DASHBOARD_TOKEN' });
    await expect(runDashboard({ ...env, TICKFLEET_DASHBOARD_USER: 'ops' }, { handleSignals: false })).rejects.toMatchObject({
      code: 'E_CONFIG',
      variable: 'TICKFLEET_DASHBOARD_PASSWORD',
    });
    await expect(runDashboard({ ...env, TICKFLEET_DASHBOARD_PORT: 'x' }, { handleSignals: false })).rejects.toMatchObject({
      variable: 'TICKFLEET_DASHBOARD_PORT',
    });
  });

  it('runDashboard parses its env, serves, and closes Redis and the store on close()', async () => {
    const running = await runDashboard(
      {
        REDIS_URL: redis.url,
        TICKFLEET_STORE_URL: fleet.storeUrl,
        TICKFLEET_PREFIX: fleet.prefix,
        TICKFLEET_DASHBOARD_PORT: '0',
        TICKFLEET_DASHBOARD_TOKEN: 't0k',
      },
      { handleSignals: false },
    );
    try {
      expect((await fetch(`${running.url}/readyz`)).status).toBe(200);
      expect((await fetch(`${running.url}/api/status`)).status).toBe(401);
      const res = await fetch(`${running.url}/api/status`, { headers: { authorization: 'Bearer t0k' } });
      expect(((await res.json()) as FleetStatus).venues.map((v) => v.venue)).toEqual(['binance', 'polygon']);
      expect(running.server.board.venues()).toEqual(['binance', 'polygon']);
    } finally {
      await running.close();
    }
    await expect(fetch(`${running.url}/healthz`)).rejects.toThrow();
  });
});
