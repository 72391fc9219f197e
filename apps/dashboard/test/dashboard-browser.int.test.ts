import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { CHROMIUM, CHROMIUM_ARGS, repoRoot, requireChromium, startRedis, tempDir, waitFor, type TempDir, type TestRedis } from '@tickfleet/testkit';
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

  server = new DashboardServer({ redis: fleet.redis, store, prefix: fleet.prefix, spoolDir: fleet.spoolDir, refreshMs: 500, statusMaxAgeMs: 0 });
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

describe('dashboard in a real browser', () => {
  it('shows each venue with its budget, then a freeze cause and new units as they happen, without a reload', async () => {
    const page = await context.newPage();
    await page.goto(`${server.url}/`);
    await page.locator('tr[data-venue="binance"]').waitFor();
    expect(await page.locator('tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-venue')))).toEqual(['binance', 'polygon']);

    expect(await cell(page, 'binance', 'status').textContent()).toBe('active');
    expect(await cell(page, 'binance', 'budget-used').textContent()).toBe('100');
    expect(await cell(page, 'binance', 'budget-limit').textContent()).toBe('1140');
    expect(await cell(page, 'polygon', 'budget-limit').textContent()).toBe('5');
    expect(await cell(page, 'binance', 'concurrency').textContent()).toMatch(/^8 \/ 8/);
    expect(await cell(page, 'binance', 'prioritized').textContent()).toBe('3');
    expect(await cell(page, 'binance', 'gaps').textContent()).toBe('1');
    expect(await cell(page, 'binance', 'lag').textContent()).toMatch(/^[45]m(\d+s)?binance:BTC\/USDT:1m:ohlcv$/);
    expect(await cell(page, 'polygon', 'freeze-cause').textContent()).toBe('none');
    expect(await page.locator('#t-spool').textContent()).toMatch(/^1 seg · \d+ B$/);
    expect(await page.locator('#mode').textContent()).toBe('read-only');

    // The fleet changes under the open page: polygon is banned, binance gets two more units.
    const { control, queues } = fleet;
    const until = Date.now() + 5 * 60_000;
    await control.freeze('polygon', until, '418');
    await queues.enqueue(liveUnits('binance', 'ETH/USDT', 2, fleet.now));

    await waitFor(async () => (await cell(page, 'polygon', 'freeze-cause').textContent()) === '418', 'the polygon freeze on the page', { timeoutMs: 10_000 });
    expect(await cell(page, 'polygon', 'freeze-remaining').textContent()).toMatch(/^4m\d+s left$|^5m left$/);
    await waitFor(async () => (await cell(page, 'binance', 'prioritized').textContent()) === '5', 'the two new binance units on the page', {
      timeoutMs: 10_000,
    });
    expect(await cell(page, 'polygon', 'runnable').textContent()).toBe('0');
    expect(await cell(page, 'polygon', 'blocked').textContent()).toBe('2');
    expect(await page.locator('#t-frozen').textContent()).toBe('1');

    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-overview.png'), fullPage: true });
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
