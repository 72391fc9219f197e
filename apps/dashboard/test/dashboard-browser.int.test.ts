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
  // A job a month behind: its lag (2.6 million seconds) is the widest y-axis label the page draws.
  const aapl = await store.jobs.upsert({ venue: 'polygon', type: 'ohlcv', symbol: 'AAPL', timeframe: '1d' });
  await store.jobs.advanceCursor(aapl.id, Math.floor(now / 86_400_000) * 86_400_000 - 30 * 86_400_000);
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

/** A box in page coordinates (CSS px), as getBoundingClientRect gives it. */
interface Box {
  left: number;
  top: number;
  right: number;
  bottom: number;
}

/** The little of the DOM the in-page measurements use (the tests' tsconfig has no DOM library). */
interface El {
  isConnected: boolean;
  id: string;
  textContent: string | null;
  scrollWidth: number;
  clientWidth: number;
  getBoundingClientRect(): Box;
  closest(selector: string): El | null;
  querySelector(selector: string): El | null;
  querySelectorAll(selector: string): Iterable<El>;
  getAttribute(name: string): string | null;
  checkVisibility(options: { opacityProperty: boolean; visibilityProperty: boolean }): boolean;
}
interface PageGlobals {
  document: El & {
    documentElement: El;
    createElement(tag: 'canvas'): { getContext(kind: '2d'): { font: string; measureText(text: string): { width: number } } | null };
  };
  devicePixelRatio: number;
  __plots: DrawnPlot[];
}

/** The parts of a uPlot instance this test reads to find where each axis label was drawn (uPlot 1.6's own fields). */
interface DrawnAxis {
  show: boolean;
  _show: boolean;
  side: number;
  scale: string;
  font: [string, number];
  gap: number;
  ticks: { show: boolean; size: number };
  _values: (string | number | null)[] | null;
  _splits: number[] | null;
}
interface DrawnPlot {
  root: El;
  over: El;
  axes: DrawnAxis[];
  series: { label?: string }[];
  valToPos(value: number, scale: string): number;
}

/**
 * Before the page's scripts: keeps every uPlot the page makes in `window.__plots`, by wrapping the
 * constructor uPlot's classic script assigns to the global, so the test can read what each drew.
 */
function recordPlots(): void {
  const plots: unknown[] = [];
  let real: unknown;
  Object.defineProperty(globalThis, '__plots', { value: plots });
  Object.defineProperty(globalThis, 'uPlot', {
    configurable: true,
    get: () => real,
    set: (ctor: new (...args: unknown[]) => object) => {
      real = new Proxy(ctor, {
        construct(target, args, newTarget) {
          const plot = Reflect.construct(target, args, newTarget) as object;
          plots.push(plot);
          return plot;
        },
      });
    },
  });
}

interface ChartLayout {
  venue: string;
  key: string;
  cell: Box;
  canvas: Box;
  legend: { series: string; text: string; box: Box; visible: boolean }[];
  /** Every series the chart plots, by label. */
  series: string[];
  /** Every axis label drawn, with the box its text takes (measured in the axis font). */
  labels: { side: number; text: string; box: Box }[];
}

interface PageLayout {
  doc: { scrollWidth: number; clientWidth: number };
  main: { scrollWidth: number; clientWidth: number; box: Box };
  tables: { id: string; box: Box }[];
  cards: { box: Box; scrollWidth: number; clientWidth: number }[];
  header: Box[];
  grids: { venue: string; box: Box }[];
  charts: ChartLayout[];
}

/** Measures the page where it stands: boxes of the tables, cards, chart cells, canvases, legends and axis labels. */
function measureLayout(): PageLayout {
  const { document, devicePixelRatio: dpr, __plots } = globalThis as unknown as PageGlobals;
  const box = (e: El): Box => {
    const r = e.getBoundingClientRect();
    return { left: r.left, top: r.top, right: r.right, bottom: r.bottom };
  };
  const widths = (e: El) => ({ scrollWidth: e.scrollWidth, clientWidth: e.clientWidth });
  const measure = document.createElement('canvas').getContext('2d')!;
  const plots = __plots.filter((u) => u.root.isConnected);
  const charts = plots.map((u): ChartLayout => {
    const cell = u.root.closest('[data-chart]')!;
    const over = u.over.getBoundingClientRect();
    const labels: ChartLayout['labels'] = [];
    for (const axis of u.axes) {
      if (!axis.show || !axis._show || !axis._values || !axis._splits) continue;
      measure.font = axis.font[0];
      const size = axis.font[1] / dpr;
      const off = (axis.ticks.show ? axis.ticks.size : 0) + axis.gap;
      axis._values.forEach((value, i) => {
        if (value === null) return;
        const text = String(value);
        const width = measure.measureText(text).width / dpr;
        const pos = u.valToPos(axis._splits![i]!, axis.scale);
        // Where uPlot 1.6 puts a label: x labels centred under their tick below the plot, y labels
        // middle-aligned beside theirs, right-aligned on the left side, left-aligned on the right.
        if (axis.side === 2) {
          const x = over.left + pos;
          labels.push({ side: 2, text, box: { left: x - width / 2, right: x + width / 2, top: over.bottom + off, bottom: over.bottom + off + size } });
        } else {
          const y = over.top + pos;
          const left = axis.side === 3 ? over.left - off - width : over.right + off;
          labels.push({ side: axis.side, text, box: { left, right: left + width, top: y - size / 2, bottom: y + size / 2 } });
        }
      });
    }
    return {
      venue: cell.closest('[data-venue]')!.getAttribute('data-venue')!,
      key: cell.getAttribute('data-chart')!,
      cell: box(cell),
      canvas: box(u.root.querySelector('canvas')!),
      legend: [...cell.querySelectorAll('.legend [data-series]')].map((e) => ({
        series: e.getAttribute('data-series')!,
        text: e.textContent ?? '',
        box: box(e),
        visible: e.checkVisibility({ opacityProperty: true, visibilityProperty: true }),
      })),
      series: u.series.slice(1).map((s) => s.label ?? ''),
      labels,
    };
  });
  return {
    doc: widths(document.documentElement),
    main: { ...widths(document.querySelector('main')!), box: box(document.querySelector('main')!) },
    tables: [...document.querySelectorAll('main table')].map((t) => ({ id: t.id, box: box(t) })),
    cards: [...document.querySelectorAll('.card')].map((c) => ({ box: box(c), ...widths(c) })),
    header: [...document.querySelectorAll('header > *')].map(box),
    grids: [...document.querySelectorAll('.venue-charts')].map((p) => ({ venue: p.getAttribute('data-venue')!, box: box(p.querySelector('.charts')!) })),
    charts,
  };
}

const inside = (inner: Box, outer: Box, slack = 0.5): boolean =>
  inner.left >= outer.left - slack && inner.right <= outer.right + slack && inner.top >= outer.top - slack && inner.bottom <= outer.bottom + slack;
const overlap = (a: Box, b: Box): boolean => a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
const width = (b: Box): number => b.right - b.left;
/** Boxes grouped into rows by their top edge. */
const rows = (boxes: Box[]): Box[][] => {
  const byTop = new Map<number, Box[]>();
  for (const b of boxes) byTop.set(Math.round(b.top), [...(byTop.get(Math.round(b.top)) ?? []), b]);
  return [...byTop.values()];
};

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
    // Durations print as the CLI prints them (core's formatDurationMs): 1500 ms is 1.5s.
    expect(await stream('majors', 'skew').textContent()).toMatch(/^12ms \/ 1\.5s/);
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
      await waitFor(async () => (await panel(page, venue).locator('canvas').count()) >= 5, `the ${venue} charts`, { timeoutMs: 30_000 });
    }
    expect(await page.evaluate(() => typeof (globalThis as unknown as { uPlot?: unknown }).uPlot)).toBe('function');
    expect(
      await panel(page, 'binance')
        .locator('[data-chart]')
        .evaluateAll((charts) => charts.map((c) => c.getAttribute('data-chart'))),
    ).toEqual(['budget', 'units', 'records', 'concurrency', 'lag']);

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

  it('reads well at 1,400 px and on laptop screens: charts share the panel width, labels inside, tables without a scroll bar', async () => {
    const page = await context.newPage();
    const errors = pageErrors(page);
    await page.addInitScript(recordPlots);
    await page.goto(`${server.url}/`);
    await page.locator('tr[data-venue="binance"]').waitFor();
    const CHARTS = ['budget', 'units', 'records', 'concurrency', 'lag'];
    const sizes = [
      { width: 1400, height: 900, perRow: 5, tablesFit: true },
      { width: 1366, height: 768, perRow: 5, tablesFit: true },
      { width: 1280, height: 800, perRow: 5, tablesFit: true },
      // A narrow window: three charts a row, then two, each still drawn at its cell's width; the
      // tables may scroll there, inside their box (the page itself does not).
      { width: 900, height: 900, perRow: 3, tablesFit: false },
    ];
    for (const { width: vw, height: vh, perRow, tablesFit } of sizes) {
      await page.setViewportSize({ width: vw, height: vh });
      // Each canvas follows its cell once the ResizeObserver has handed uPlot the new width.
      let layout = await page.evaluate(measureLayout);
      await waitFor(
        async () => {
          layout = await page.evaluate(measureLayout);
          return layout.charts.length === 2 * CHARTS.length && layout.charts.every((c) => Math.abs(width(c.canvas) - width(c.cell)) <= 1);
        },
        `every chart drawn at its cell's width at ${vw}x${vh}`,
        { timeoutMs: 30_000 },
      );
      const at = `${vw}x${vh}`;

      // No horizontal scroll bar on the page; none around the tables either, down to a laptop's width.
      expect({ at, overflow: layout.doc.scrollWidth - layout.doc.clientWidth }).toEqual({ at, overflow: 0 });
      if (tablesFit) {
        expect({ at, overflow: layout.main.scrollWidth - layout.main.clientWidth }).toEqual({ at, overflow: 0 });
        for (const t of layout.tables) expect({ at, table: t.id, inMain: inside(t.box, layout.main.box) }).toEqual({ at, table: t.id, inMain: true });
      }

      // The cards and the header: nothing overlaps, nothing is cut; the cards share one row.
      if (tablesFit) expect({ at, cardRows: rows(layout.cards.map((c) => c.box)).length }).toEqual({ at, cardRows: 1 });
      for (const [i, c] of layout.cards.entries()) {
        expect({ at, card: i, cut: c.scrollWidth > c.clientWidth, outside: c.box.right > vw }).toEqual({ at, card: i, cut: false, outside: false });
        for (const other of layout.cards.slice(i + 1)) expect({ at, card: i, overlaps: overlap(c.box, other.box) }).toEqual({ at, card: i, overlaps: false });
      }
      for (const [i, h] of layout.header.entries()) {
        expect({ at, header: i, outside: h.right > vw }).toEqual({ at, header: i, outside: false });
        for (const other of layout.header.slice(i + 1)) expect({ at, header: i, overlaps: overlap(h, other) }).toEqual({ at, header: i, overlaps: false });
      }

      for (const grid of layout.grids) {
        const charts = layout.charts.filter((c) => c.venue === grid.venue);
        expect(charts.map((c) => c.key)).toEqual(CHARTS);
        // Side by side: `perRow` charts a row, each at least its share of the panel, and no chart
        // alone on a row of its own.
        const chartRows = rows(charts.map((c) => c.cell));
        expect({ at, venue: grid.venue, perRow: chartRows.map((r) => r.length) }).toEqual({
          at,
          venue: grid.venue,
          perRow: perRow === 5 ? [5] : [3, 2],
        });
        for (const c of charts) {
          const where = { at, venue: c.venue, chart: c.key };
          expect({ ...where, share: width(c.cell) / width(grid.box) >= 0.9 / perRow - 0.02 }).toEqual({ ...where, share: true });
          expect({ ...where, cellInPanel: inside(c.cell, grid.box), canvasInCell: inside(c.canvas, c.cell) }).toEqual({
            ...where,
            cellInPanel: true,
            canvasInCell: true,
          });
          // Every axis label drawn inside the canvas (so inside the chart's cell), none clipped.
          const ys = c.labels.filter((l) => l.side !== 2);
          expect({ ...where, yLabels: ys.length > 1 }).toEqual({ ...where, yLabels: true });
          for (const l of c.labels) expect({ ...where, label: l.text, inside: inside(l.box, c.canvas) }).toEqual({ ...where, label: l.text, inside: true });
          // A legend entry for each series, visible inside the cell.
          expect(c.legend.map((l) => l.series)).toEqual(c.series);
          for (const l of c.legend)
            expect({ ...where, series: l.series, visible: l.visible && width(l.box) > 0, inside: inside(l.box, c.cell) }).toEqual({
              ...where,
              series: l.series,
              visible: true,
              inside: true,
            });
        }
      }

      mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: join(ARTIFACTS, `dashboard-${at}.png`), fullPage: true });
    }

    // The month-old polygon job: its lag axis reads in days, not in seven-digit seconds.
    const layout = await page.evaluate(measureLayout);
    const lag = layout.charts.find((c) => c.venue === 'polygon' && c.key === 'lag')!;
    expect(lag.labels.filter((l) => l.side === 3).map((l) => l.text)).toContainEqual(expect.stringMatching(/^\d+d$/));
    const records = layout.charts.find((c) => c.venue === 'binance' && c.key === 'records')!;
    expect(records.labels.filter((l) => l.side === 3).map((l) => l.text)).toContainEqual(expect.stringMatching(/^\d+(\.\d+)?k$/));

    // A cursor on one chart shows the values under it, with their time, in every chart of the venue.
    await page.setViewportSize({ width: 1400, height: 900 });
    const plot = panel(page, 'binance').locator('[data-chart="units"] .u-over');
    const over = (await plot.boundingBox())!;
    await page.mouse.move(over.x + over.width - 4, over.y + over.height / 2);
    for (const key of CHARTS)
      await waitFor(
        async () => /^\d\d:\d\d:\d\dZ$/.test((await panel(page, 'binance').locator(`[data-chart="${key}"] .legend .at`).textContent()) ?? ''),
        `the ${key} legend at the cursor`,
        {
          timeoutMs: 10_000,
        },
      );
    expect(errors).toEqual([]);
    await page.close();
  });

  it('shows each venue’s health and last error in the venue table as the fleet reports unit outcomes', async () => {
    await fleet.store.connectors.upsert(connector('kraken', 100, { maxInflight: 2 }));
    const page = await context.newPage();
    const errors = pageErrors(page);
    await page.goto(`${server.url}/`);
    await waitFor(async () => (await cell(page, 'kraken', 'health').textContent()) === 'idle', 'kraken idle on the page', { timeoutMs: 30_000 });
    expect(await cell(page, 'kraken', 'last-error').textContent()).toBe('');

    // Every kraken unit is refused, as a worker reports them: the row turns failing, its connector still active.
    const refused = { ok: false, latencyMs: 3, cause: 'connection', message: 'kraken ohlc request failed: connect ECONNREFUSED 127.0.0.1:1' } as const;
    await fleet.control.reportOutcomes(
      'kraken',
      Array.from({ length: 6 }, () => refused),
    );
    await waitFor(async () => (await cell(page, 'kraken', 'health').textContent()) === 'failing', 'kraken failing on the page', { timeoutMs: 30_000 });
    expect(await cell(page, 'kraken', 'status').textContent()).toBe('active');
    expect(await cell(page, 'kraken', 'last-error').textContent()).toMatch(/^connection \d[\d.dhms]* ago$/);
    expect(await cell(page, 'kraken', 'health').getAttribute('class')).toBe('pill frozen');
    const title = (await cell(page, 'kraken', 'health-line').getAttribute('title')) ?? '';
    expect(title).toMatch(
      /^the last 6 units failed, none succeeded since \(last: connection\)\nlast error \d{4}-\d\d-\d\dT[\d:.]+Z: kraken ohlc request failed/,
    );
    // The failing row with its last error still fits a laptop's 1,280 px: no scroll bar on the page or around the tables.
    await page.setViewportSize({ width: 1280, height: 800 });
    const overflow = await page.evaluate(() => {
      const { document } = globalThis as unknown as PageGlobals;
      const main = document.querySelector('main')!;
      return { page: document.documentElement.scrollWidth - document.documentElement.clientWidth, main: main.scrollWidth - main.clientWidth };
    });
    expect(overflow).toEqual({ page: 0, main: 0 });
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-health.png') });

    // It answers again: ten successes in a row and it reads healthy, the last error still shown.
    await fleet.control.reportOutcomes(
      'kraken',
      Array.from({ length: 10 }, () => ({ ok: true, latencyMs: 5 })),
    );
    await waitFor(async () => (await cell(page, 'kraken', 'health').textContent()) === 'healthy', 'kraken healthy on the page', { timeoutMs: 30_000 });
    expect(await cell(page, 'kraken', 'health').getAttribute('class')).toBe('pill active');
    expect(await cell(page, 'kraken', 'last-error').textContent()).toMatch(/^connection .+ ago$/);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("shows each connector's enabled and total jobs and when one last ran", async () => {
    const page = await context.newPage();
    const errors = pageErrors(page);
    await page.goto(`${server.url}/`);
    await page.locator('tr[data-venue="binance"]').waitFor();
    const jobsOf = async (venue: string): Promise<string> =>
      `${await cell(page, venue, 'jobs').textContent()} | ${await cell(page, venue, 'last-job-run').textContent()}`;
    expect(await jobsOf('polygon')).toBe('1 / 1 | never ran');
    // A unit of binance's job ends (the store stamps it with the fleet's clock), and polygon gets a disabled job.
    await fleet.store.jobs.complete('binance:BTC/USDT:1m:ohlcv', { nextRunAt: fleet.now + 60_000 });
    await fleet.store.jobs.upsert({ venue: 'polygon', type: 'ohlcv', symbol: 'MSFT', timeframe: '1d', enabled: false });
    await waitFor(async () => /^1 \/ 1 \| ran \d[\d.dhms]* ago$/.test(await jobsOf('binance')), 'binance ran on the page', { timeoutMs: 30_000 });
    await waitFor(async () => (await jobsOf('polygon')) === '1 / 2 | never ran', 'the disabled polygon job on the page', { timeoutMs: 30_000 });
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
