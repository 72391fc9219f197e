import { runCli, tempDir, type TempDir } from '@tickfleet/testkit';
import { calendarFor, candleEnvelope, tradeEnvelope } from '@tickfleet/core';
import { SqliteSink } from '@tickfleet/sinks';

const T0 = Date.UTC(2024, 0, 1);
const M = 60_000;

describe('tickfleet data', () => {
  let dir: TempDir;
  let env: Record<string, string>;
  beforeAll(async () => {
    dir = tempDir('cli-data-');
    env = { TICKFLEET_SINK_URL: dir.sqliteUrl('data.db'), TICKFLEET_STORE_URL: dir.sqliteUrl('state.db') };
    const sink = new SqliteSink(dir.file('data.db'));
    const minutes = [0, 1, 2, 5, 6, 7, 8, 9];
    await sink.write([
      ...minutes.map((m) =>
        candleEnvelope(
          { venue: 'binance', symbol: 'BTC/USDT', timeframe: '1m', openTime: T0 + m * M, open: '1', high: '2', low: '0.5', close: `1.${m}`, volume: '3' },
          T0 + (m + 1) * M,
        ),
      ),
      // Polygon day bars of January 2024 at New York midnight, without Wednesday the 17th
      ...calendarFor('polygon')
        .expectedOpenTimes('1d', T0, Date.UTC(2024, 1, 1))
        .filter((t) => t !== Date.UTC(2024, 0, 17, 5))
        .map((t) =>
          candleEnvelope(
            { venue: 'polygon', symbol: 'AAPL', timeframe: '1d', openTime: t, open: '1', high: '2', low: '0.5', close: '1.5', volume: '3' },
            t + 1,
          ),
        ),
      ...[1, 2, 3].map((i) =>
        tradeEnvelope(
          { venue: 'binance', symbol: 'BTC/USDT', tradeId: String(i), timeMs: T0 + i, price: '10, "odd"', size: '1' },
          `trade:binance:BTC/USDT:${i}`,
          T0 + i,
        ),
      ),
    ]);
    await sink.close();
  });
  afterAll(() => dir.remove());

  it('counts a series with first, last and missing candles', async () => {
    const r = await runCli(['data', 'count', 'binance', 'BTC/USDT', '--timeframe', '1m', '--json'], { env });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      count: 8,
      expected: 10,
      firstOpenTime: T0,
      lastOpenTime: T0 + 9 * M,
      openGaps: 0,
      missingIntervals: 1,
      missingCandles: 2,
    });
    const ranged = await runCli(
      ['data', 'count', 'binance', 'BTC/USDT', '--timeframe', '1m', '--from', '2024-01-01T00:05:00Z', '--to', '2024-01-01T00:08:00Z', '--json'],
      { env },
    );
    expect(JSON.parse(ranged.stdout)).toMatchObject({ count: 3, expected: 3, firstOpenTime: T0 + 5 * M, lastOpenTime: T0 + 7 * M });
  });

  it('counts an equity series against its trading calendar: weekends and holidays are not missing', async () => {
    const r = await runCli(['data', 'count', 'polygon', 'AAPL', '--timeframe', '1d', '--from', '2024-01-01', '--to', '2024-02-01', '--json'], { env });
    expect(r.stderr).toBe('');
    // 21 sessions (New Year's Day and Martin Luther King Jr. Day closed), one of them not stored
    expect(JSON.parse(r.stdout)).toMatchObject({ count: 20, expected: 21, missingIntervals: 1, missingCandles: 1, firstOpenTime: Date.UTC(2024, 0, 2, 5) });
  });

  it('exports candles as CSV and trades as JSON lines, quietly when not on a TTY', async () => {
    const csv = await runCli(['data', 'export', 'binance', 'BTC/USDT', '--timeframe', '1m', '--format', 'csv', '--to', '2024-01-01T00:03:00Z'], { env });
    expect(csv.code).toBe(0);
    expect(csv.stderr).toBe('');
    expect(csv.stdout.trim().split('\n')).toEqual([
      'open_time,open_time_iso,open,high,low,close,volume,trades',
      `${T0},2024-01-01T00:00:00.000Z,1,2,0.5,1.0,3,`,
      `${T0 + M},2024-01-01T00:01:00.000Z,1,2,0.5,1.1,3,`,
      `${T0 + 2 * M},2024-01-01T00:02:00.000Z,1,2,0.5,1.2,3,`,
    ]);
    const out = dir.file('trades.jsonl');
    const jl = await runCli(['data', 'export', 'binance', 'BTC/USDT', '--channel', 'trades', '--format', 'csv', '--out', out], { env });
    expect(jl.code).toBe(0);
    const { readFileSync } = await import('node:fs');
    const lines = readFileSync(out, 'utf8').trim().split('\n');
    expect(lines).toHaveLength(4);
    expect(lines[1]).toBe(
      `mid:trade:binance:BTC/USDT:1,${T0 + 1},${T0 + 1},"{""venue"":""binance"",""symbol"":""BTC/USDT"",""tradeId"":""1"",""timeMs"":${T0 + 1},""price"":""10, \\""odd\\"""",""size"":""1""}"`,
    );
  });

  it('names bad arguments and refuses a JSONL sink for reads (exit 2)', async () => {
    const tf = await runCli(['data', 'count', 'binance', 'BTC/USDT', '--timeframe', '7m'], { env });
    expect(tf.code).toBe(2);
    expect(tf.stderr).toContain('invalid --timeframe');
    const venue = await runCli(['data', 'count', 'Bin ance', 'BTC/USDT', '--timeframe', '1m'], { env });
    expect(venue.code).toBe(2);
    expect(venue.stderr).toContain('invalid venue');
    const jsonl = await runCli(['data', 'count', 'binance', 'BTC/USDT', '--timeframe', '1m', '--sink', `jsonl://${dir.file('raw')}`], { env });
    expect(jsonl.code).toBe(2);
    expect(jsonl.stderr).toMatch(/invalid --sink: expected a sqlite:\/\/ or mongodb:\/\/ sink \(jsonl:\/\/ is a raw append-only log/);
    const url = await runCli(['data', 'count', 'binance', 'BTC/USDT', '--timeframe', '1m', '--sink', 'postgres://x'], { env });
    expect(url.code).toBe(2);
    expect(url.stderr).toContain('invalid --sink');
  });

  it('migrate-jsonl moves an earlier-layout JSONL root into <venue>/<stream>/date=…, then has nothing to move', async () => {
    const { mkdirSync, writeFileSync, readdirSync } = await import('node:fs');
    const { join } = await import('node:path');
    const root = dir.file('old-jsonl');
    const part = join(root, 'trades', 'date=2024-01-01');
    mkdirSync(part, { recursive: true });
    const trade = (venue: string, i: number): string =>
      JSON.stringify({
        key: `mid:trade:${venue}:X:${i}`,
        ...tradeEnvelope({ venue, symbol: 'X', tradeId: String(i), timeMs: T0 + i, price: '1', size: '1' }, `trade:${venue}:X:${i}`, T0 + i),
      });
    writeFileSync(join(part, 'part-1-1.jsonl'), `${trade('binance', 1)}\n${trade('polymarket', 2)}\n${trade('binance', 3)}\n`);
    const first = await runCli(['data', 'migrate-jsonl', `jsonl://${root}`, '--json'], { env });
    expect(first.stderr).toBe('');
    expect(JSON.parse(first.stdout)).toMatchObject({ streams: ['trades'], files: 1, records: { binance: 2, polymarket: 1 } });
    expect(readdirSync(root).sort()).toEqual(['binance', 'polymarket']);
    const again = await runCli(['data', 'migrate-jsonl', root], { env });
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('already in the per-venue layout, nothing to move');
  });

  it("migrate-jsonl moves <venue>/book/ to the design's <venue>/orderbooks/, then has nothing to move", async () => {
    const { existsSync, mkdirSync, writeFileSync, readdirSync } = await import('node:fs');
    const { join } = await import('node:path');
    const root = dir.file('book-jsonl');
    const part = join(root, 'polymarket', 'book', 'date=2024-01-01');
    mkdirSync(part, { recursive: true });
    writeFileSync(join(part, 'part-1-1.jsonl'), '{"key":"mid:book:polymarket:T:1","venue":"polymarket"}\n');
    const first = await runCli(['data', 'migrate-jsonl', root], { env });
    expect(first.stderr).toBe('');
    expect(first.stdout).toContain(`${root}: moved 1 order-book files from polymarket/book into <venue>/orderbooks/`);
    expect(readdirSync(join(root, 'polymarket'))).toEqual(['orderbooks']);
    expect(existsSync(join(root, 'polymarket', 'orderbooks', 'date=2024-01-01', 'part-1-1.jsonl'))).toBe(true);
    const again = await runCli(['data', 'migrate-jsonl', root, '--json'], { env });
    expect(JSON.parse(again.stdout)).toMatchObject({ files: 0, bookFiles: 0, bookDirs: [] });
  });
});
