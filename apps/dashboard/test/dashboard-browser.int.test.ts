import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'bullmq';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { createRedisConnection } from '@tickfleet/queues';
import { publishStreamLive, StreamLeases } from '@tickfleet/streams';
import { CHROMIUM, CHROMIUM_ARGS, repoRoot, requireChromium, startRedis, tempDir, waitFor, type TempDir, type TestRedis } from '@tickfleet/testkit';
import type { FreezeMark } from '../src/fleet-history.js';
import { DashboardServer } from '../src/index.js';
import { connector, liveUnits, openTestFleet, writeSpoolSegment, type TestFleet } from './fleet-fixture.js';

const ARTIFACTS = join(repoRoot(), '.test-artifacts');

let redis: TestRedis;
let dir: TempDir;
let profile: TempDir;
let fleet: TestFleet;
let server: DashboardServer;
let context: BrowserContext;

beforeAll(async () => {
  // No skip: a machine without Debian's chromium fails here, saying how to get it.
  requireChromium();
  redis = await startRedis();
  dir = tempDir();
  profile = tempDir('tickfleet-chromium-');
  fleet = await openTestFleet(redis.url, redis.namespace(), dir, Date.now());
  const { store, queues, now } = fleet;
  await store.connectors.upsert(
    connector('binance', 1200, { rateLimit: { policy: 'fixed-window', limit: 1200, periodMs: 60_000, headroom: 0.95 }, maxInflight: 8 }),
  );
  await store.connectors.upsert(connector('polygon', 5, { maxInflight: 2 }));
  const btc = await store.jobs.upsert({ venue: 'binance', type: 'ohlcv', symbol: 'BTC/USDT', timeframe: '1m' });
  await store.jobs.advanceCursor(btc.id, Math.floor(now / 60_000) * 60_000 - 5 * 60_000);
  await store.gaps.record({ jobId: btc.id, fromMs: 0, toMs: 60_000 }, now);
  await store.budgets.acquire('binance', 100);
  await queues.enqueue([...liveUnits('binance', 'BTC/USDT', 3, now), ...liveUnits('polygon', 'AAPL', 2, now)]);
  writeSpoolSegment(join(fleet.spoolDir, 'worker-0'), now, 4);
  // A stream held by a worker (a real lease cycle) that published its live state, with one
  // unhealed trade-id hole on the ledger; the holder's id carries markup the page must show as text.
  const stream = await store.streams.upsert({ name: 'majors', venue: 'binance', symbols: ['BTC/USDT', 'ETH/USDT'], channels: ['trades', 'book'] });
  await store.streams.upsert({ name: 'kraken-pairs', venue: 'kraken', symbols: ['BTC/USD'] });
  const leases = new StreamLeases(fleet.redis, 'worker-<b>a</b>', { prefix: fleet.prefix, ttlMs: 600_000 });
  leases.setStreams([stream.name], stream.version);
  const [held] = (await leases.tick()).acquired;
  await publishStreamLive(
    fleet.redis,
    fleet.prefix,
    {
      name: 'majors',
      venue: 'binance',
      worker: 'worker-<b>a</b>',
      token: held!.token,
      state: 'live',
      connectedSince: new Date(now - 90_000).toISOString(),
      messages: 4321,
      reconnects: 3,
      gapsFound: 4,
      gapsHealed: 3,
      gapsUnhealed: 1,
      resyncs: 2,
      checksumMismatches: 0,
      garbledFrames: 0,
      lastMessageAgeMs: 250,
      recordsDelivered: 4300,
      stored: 4300,
      duplicates: 0,
      timeQuality: { skewP50Ms: 12, skewP99Ms: 1500, outOfOrder: 0 },
      updatedAt: now,
    },
    600_000,
  );
  await store.gaps.record({ jobId: 'binance:ETH/USDT:-:trades', fromMs: 500, toMs: 510, kind: 'trade-ids' }, now);

  server = new DashboardServer({
    redis: fleet.redis,
    store,
    prefix: fleet.prefix,
    spoolDir: fleet.spoolDir,
    refreshMs: 500,
    statusMaxAgeMs: 0,
    historyIntervalMs: 250,
  });
  await server.start();
  context = await chromium.launchPersistentContext(profile.path, {
    executablePath: CHROMIUM,
    headless: true,
    args: [...CHROMIUM_ARGS],
    viewport: { width: 1440, height: 640 },
  });
});

afterAll(async () => {
  await context?.close();
  await server?.stop();
  await fleet?.close();
  await redis?.stop();
  dir?.remove();
  profile?.remove();
});

const cell = (page: Page, venue: string, field: string) => page.locator(`tr[data-venue="${venue}"] [data-field="${field}"]`);
const panel = (page: Page, venue: string) => page.locator(`.venue-charts[data-venue="${venue}"]`);
/** The freeze bands the page drew for a venue, as it exposes them (the history JSON's marks). */
const marksOf = async (page: Page, venue: string): Promise<FreezeMark[]> =>
  JSON.parse((await panel(page, venue).getAttribute('data-marks')) ?? '[]') as FreezeMark[];

/**
 * What went wrong in the page while it ran: uncaught exceptions of its script and failed requests
 * (but the favicon's, which the dashboard has none of). Drawing the tables and charts at all shows
 * the script was served and ran; this shows nothing in it failed along the way.
 */
function pageErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(`uncaught: ${err.message}`));
  page.on('response', (res) => {
    if (res.status() >= 400 && new URL(res.url()).pathname !== '/favicon.ico') errors.push(`HTTP ${res.status()}: ${res.url()}`);
  });
  page.on('requestfailed', (req) => errors.push(`failed: ${req.url()}`));
  return errors;
}

/** Completes `n` binance units for real: a BullMQ worker takes each and completes it with the return value a fleet worker gives. */
async function completeUnits(n: number, records: number): Promise<void> {
  const connection = createRedisConnection(redis.url);
  const worker = new Worker(fleet.queues.queue('binance').name, null, { connection, prefix: fleet.prefix, autorun: false });
  try {
    for (let i = 0; i < n; i++) {
      const token = `charts-${i}`;
      const job = await worker.getNextJob(token);
      if (!job?.id) throw new Error(`no binance unit to complete (${i} of ${n} done)`);
      await job.moveToCompleted({ records, outcome: 'ok' }, token, false);
    }
    // What a tickfleet worker then reports for them (its batched AIMD report carries the totals).
    await fleet.control.reportOutcomes(
      'binance',
      Array.from({ length: n }, () => ({ ok: true, latencyMs: 5, records })),
    );
  } finally {
    await worker.close();
    await connection.quit();
  }
}

/** Width and height of a PNG file, after checking its signature and IHDR chunk. */
function pngSize(path: string): { width: number; height: number; bytes: number } {
  const png = readFileSync(path);
  expect(png.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))).toBe(true);
  expect(png.subarray(12, 16).toString('ascii')).toBe('IHDR');
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20), bytes: png.length };
}

describe('dashboard in a real browser', () => {
  it('shows each venue with its budget, then a freeze cause and new units as they happen, without a reload', async () => {
    const page = await context.newPage();
    const errors = pageErrors(page);
    await page.goto(`${server.url}/`);
    await page.locator('tr[data-venue="binance"]').waitFor();
    expect(await page.locator('#venues tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-venue')))).toEqual(['binance', 'polygon']);

    expect(await cell(page, 'binance', 'status').textContent()).toBe('active');
    expect(await cell(page, 'binance', 'budget-used').textContent()).toBe('100');
    expect(await cell(page, 'binance', 'budget-limit').textContent()).toBe('1140');
    expect(await cell(page, 'polygon', 'budget-limit').textContent()).toBe('5');
    expect(await cell(page, 'binance', 'concurrency').textContent()).toMatch(/^8 \/ 8/);
    expect(await cell(page, 'binance', 'prioritized').textContent()).toBe('3');
    // The ohlcv job's gap and the stream's trade-id hole: both open on binance's ledger.
    expect(await cell(page, 'binance', 'gaps').textContent()).toBe('2');
    expect(await cell(page, 'binance', 'lag').textContent()).toMatch(/^[45]m(\d+s)?binance:BTC\/USDT:1m:ohlcv$/);
    expect(await cell(page, 'polygon', 'freeze-cause').textContent()).toBe('none');
    expect(await page.locator('#t-spool').textContent()).toMatch(/^1 seg · \d+ B$/);
    expect(await page.locator('#mode').textContent()).toBe('read-only');

    // The streams: the held one with its live state and ledger entry, the unheld one listed too.
    const stream = (name: string, field: string) => page.locator(`tr[data-stream="${name}"] [data-field="${field}"]`);
    expect(await page.locator('#streams tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-stream')))).toEqual(['kraken-pairs', 'majors']);
    expect(await stream('majors', 'holder').textContent()).toBe('worker-<b>a</b>');
    expect(await page.locator('#streams b').count()).toBe(0);
    expect(await stream('majors', 'symbols').textContent()).toBe('2');
    expect(await stream('majors', 'channels').textContent()).toBe('trades, book');
    expect(await stream('majors', 'state').textContent()).toBe('live');
    expect(await stream('majors', 'connected-since').textContent()).toMatch(/^since \d\d:\d\d:\d\dZ$/);
    expect(await stream('majors', 'messages').textContent()).toBe('4321');
    expect(await stream('majors', 'reconnects').textContent()).toBe('3');
    expect(await stream('majors', 'gaps').textContent()).toBe('4 / 3 / 1');
    expect(await stream('majors', 'resyncs').textContent()).toBe('2');
    expect(await stream('majors', 'last-message').textContent()).toBe('250ms ago');
    expect(await stream('majors', 'skew').textContent()).toMatch(/^12ms \/ 2s/);
    expect(await stream('majors', 'ledger-count').textContent()).toBe('1');
    expect(await stream('majors', 'ledger-entry').textContent()).toBe('ETH/USDT trade ids 500..509');
    expect(await stream('kraken-pairs', 'state').textContent()).toBe('unheld');
    expect(await stream('kraken-pairs', 'holder').textContent()).toBe('-');
    expect(await page.locator('#t-streams').textContent()).toBe('1 / 2');

    // The fleet changes under the open page: polygon is banned, binance gets two more units.
    const { control, queues } = fleet;
    const until = Date.now() + 5 * 60_000;
    await control.freeze('polygon', until, '418');
    await queues.enqueue(liveUnits('binance', 'ETH/USDT', 2, fleet.now));

    await waitFor(async () => (await cell(page, 'polygon', 'freeze-cause').textContent()) === '418', 'the polygon freeze on the page', { timeoutMs: 30_000 });
    expect(await cell(page, 'polygon', 'freeze-remaining').textContent()).toMatch(/^4m\d+s left$|^5m left$/);
    await waitFor(async () => (await cell(page, 'binance', 'prioritized').textContent()) === '5', 'the two new binance units on the page', {
      timeoutMs: 30_000,
    });
    expect(await cell(page, 'polygon', 'runnable').textContent()).toBe('0');
    expect(await cell(page, 'polygon', 'blocked').textContent()).toBe('2');
    expect(await page.locator('#t-frozen').textContent()).toBe('1');

    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-overview.png'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  });

  it('charts each venue from the dashboard origin alone: throughput of completed units, and a venue frozen mid-run as a band', async () => {
    const page = await context.newPage();
    const requests: string[] = [];
    page.on('request', (req) => requests.push(req.url()));
    const errors = pageErrors(page);
    await page.goto(`${server.url}/`);
    for (const venue of ['binance', 'polygon']) {
      await waitFor(async () => (await panel(page, venue).locator('canvas').count()) >= 4, `the ${venue} charts`, { timeoutMs: 30_000 });
    }
    expect(await page.evaluate(() => typeof (globalThis as unknown as { uPlot?: unknown }).uPlot)).toBe('function');
    expect(
      await panel(page, 'binance')
        .locator('[data-chart]')
        .evaluateAll((charts) => charts.map((c) => c.getAttribute('data-chart'))),
    ).toEqual(['budget', 'throughput', 'concurrency', 'lag']);

    // Polygon was banned (418) in the previous test while the dashboard sampled: its band is there.
    await waitFor(async () => (await marksOf(page, 'polygon')).some((m) => m.cause === '418'), 'the polygon 418 band', { timeoutMs: 30_000 });

    // Work under the open page: two units complete (720 candles each), then binance is frozen.
    await completeUnits(2, 720);
    await waitFor(async () => (await panel(page, 'binance').getAttribute('data-units')) === '2', 'the two completed units charted', { timeoutMs: 30_000 });
    expect(await panel(page, 'binance').getAttribute('data-records')).toBe('1440');
    const frozenAt = Date.now();
    await fleet.control.freeze('binance', frozenAt + 60_000, '429');
    await waitFor(async () => (await marksOf(page, 'binance')).some((m) => m.cause === '429'), 'the binance freeze band', { timeoutMs: 30_000 });
    const [band] = (await marksOf(page, 'binance')).filter((m) => m.cause === '429');
    expect(band!.fromMs).toBeGreaterThanOrEqual(frozenAt);
    expect(band!.toMs).toBe(frozenAt + 60_000);
    expect(await panel(page, 'binance').locator('.marks li[data-cause="429"]').textContent()).toMatch(/^429 freeze \d\d:\d\d:\d\dZ → \d\d:\d\d:\d\dZ/);

    mkdirSync(ARTIFACTS, { recursive: true });
    const shot = join(ARTIFACTS, 'dashboard-charts.png');
    await page.screenshot({ path: shot, fullPage: true });
    const size = pngSize(shot);
    expect(size.width).toBe(1440);
    expect(size.height).toBeGreaterThan(640);
    expect(size.bytes).toBeGreaterThan(10_000);

    // The range selector asks for the longer history.
    await page.selectOption('#range', '60');
    await waitFor(() => requests.some((u) => u.endsWith('/api/history?minutes=60')), 'the 60-minute history requested', { timeoutMs: 30_000 });

    // Everything the page loaded, the chart library included, came from the dashboard.
    const origin = new URL(server.url).origin;
    expect(requests).toContain(`${origin}/assets/uplot.iife.min.js`);
    expect(requests).toContain(`${origin}/assets/uplot.min.css`);
    expect(requests).toContain(`${origin}/assets/overview.js`);
    expect(requests).toContain(`${origin}/assets/overview.css`);
    expect(requests.filter((u) => new URL(u).origin !== origin)).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('opens the bull-board page of a venue queue from the overview', async () => {
    const page = await context.newPage();
    await page.goto(`${server.url}/`);
    await cell(page, 'binance', 'venue').click();
    await page.waitForURL(/\/queues\/queue\/%7Bbinance%7D/);
    // bull-board renders its job cards client-side; the units are `incremental` jobs.
    await page.getByText('incremental').first().waitFor({ timeout: 15_000 });
    const text = await page.locator('body').innerText();
    expect(text).toContain('binance');
    expect(text).toMatch(/live\|binance\|BTC\/USDT\|1m\|ohlcv\|\d+/);
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-queue.png') });
    await page.close();
  });
});
