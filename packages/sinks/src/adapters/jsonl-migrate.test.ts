import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ValidationError } from '@tickfleet/core';
import { tempDir, type TempDir } from '@tickfleet/testkit';
import { JsonlSink, migrateJsonlLayout } from '../index.js';
import { books, trades, T0 } from '../../test/fixtures/envelopes.js';

const line = (e: ReturnType<typeof trades>[number]): string => JSON.stringify({ key: `mid:${e.messageId}`, ...e });

describe('migrateJsonlLayout', () => {
  let dir: TempDir;
  beforeEach(() => (dir = tempDir('jsonl-migrate-')));
  afterEach(() => dir.remove());

  /** An earlier-layout root: one trades file mixing two venues, a dead writer's torn open file, and an errors file. */
  function legacyRoot(): { binance: string[]; polymarket: string[] } {
    const part = join(dir.path, 'trades', 'date=2024-01-01');
    mkdirSync(part, { recursive: true });
    const binance = trades(3).map(line);
    const polymarket = trades(2, 0, 'polymarket', 'TOKEN1').map(line);
    writeFileSync(join(part, 'part-111-1.jsonl'), `${binance[0]}\n${polymarket[0]}\n${binance[1]}\n`);
    // pid 999999999 cannot be alive: its open file is finalized, the torn last line cut
    writeFileSync(join(part, 'part-999999999-2.jsonl.open'), `${binance[2]}\n${polymarket[1]}\n{"key":"mid:trade:bin`);
    const errors = join(dir.path, 'errors', 'date=2024-01-01');
    mkdirSync(errors, { recursive: true });
    writeFileSync(
      join(errors, 'part-111-1.jsonl'),
      `${JSON.stringify({ atMs: T0, venue: null, channel: null, field: 'envelope', message: 'x', sample: '{}' })}\n`,
    );
    return { binance, polymarket };
  }

  it('splits every file by venue into <venue>/<stream>/date=…, keeps every line, and is idempotent', async () => {
    const { binance, polymarket } = legacyRoot();
    const result = migrateJsonlLayout(dir.path);
    expect(result).toMatchObject({ streams: ['errors', 'trades'], files: 3, records: { binance: 3, polymarket: 2, _none: 1 }, bookDirs: [], bookFiles: 0 });
    expect(readdirSync(dir.path).sort()).toEqual(['_none', 'binance', 'polymarket']);
    const read = (venue: string, name: string): string => readFileSync(join(dir.path, venue, 'trades', 'date=2024-01-01', name), 'utf8');
    expect(read('binance', 'part-111-1.jsonl')).toBe(`${binance[0]}\n${binance[1]}\n`);
    expect(read('binance', 'part-999999999-2.jsonl')).toBe(`${binance[2]}\n`);
    expect(read('polymarket', 'part-111-1.jsonl')).toBe(`${polymarket[0]}\n`);
    expect(read('polymarket', 'part-999999999-2.jsonl')).toBe(`${polymarket[1]}\n`);
    expect(existsSync(join(dir.path, '_none', 'errors', 'date=2024-01-01', 'part-111-1.jsonl'))).toBe(true);

    // a second run moves nothing, and the sink opens the migrated root and finds every key
    expect(migrateJsonlLayout(dir.path)).toMatchObject({ streams: [], files: 0, records: {} });
    const sink = new JsonlSink(dir.path);
    expect(await sink.write([...trades(3), ...trades(2, 0, 'polymarket', 'TOKEN1')])).toMatchObject({ inserted: 0, duplicates: 5 });
    await sink.close();
  });

  it("moves book snapshots to the design's orderbooks/: from the earlier layout's book/ and from <venue>/book/", async () => {
    const line = (e: ReturnType<typeof books>[number]): string => JSON.stringify({ key: `mid:${e.messageId}`, ...e });
    const [b0, b1] = books(2).map(line);
    const [b2, b3] = books(2, 'limitless', 'some-slug').map(line);
    // Earlier layout: <root>/book/date=… with every venue in one file.
    const legacy = join(dir.path, 'book', 'date=2024-01-01');
    mkdirSync(legacy, { recursive: true });
    writeFileSync(join(legacy, 'part-111-1.jsonl'), `${b0}\n${b1}\n`);
    // Per-venue, before books followed the design: <venue>/book/date=…, with a dead writer's lock and open file.
    const perVenue = join(dir.path, 'limitless', 'book', 'date=2024-01-01');
    mkdirSync(perVenue, { recursive: true });
    writeFileSync(join(perVenue, 'part-222-1.jsonl'), `${b2}\n`);
    writeFileSync(join(perVenue, 'part-999999999-3.jsonl.open'), `${b3}\n{"key":"mid:book`);
    writeFileSync(join(perVenue, '.writer.lock'), '999999999');

    const result = migrateJsonlLayout(dir.path);
    expect(result).toMatchObject({ streams: ['book'], files: 1, records: { polymarket: 2 }, bookDirs: ['limitless/book'], bookFiles: 2 });
    const read = (venue: string, date: string, name: string): string => readFileSync(join(dir.path, venue, 'orderbooks', `date=${date}`, name), 'utf8');
    expect(read('polymarket', '2024-01-01', 'part-111-1.jsonl')).toBe(`${b0}\n${b1}\n`);
    expect(read('limitless', '2024-01-01', 'part-222-1.jsonl')).toBe(`${b2}\n`);
    expect(read('limitless', '2024-01-01', 'part-999999999-3.jsonl')).toBe(`${b3}\n`);
    expect(existsSync(join(dir.path, 'book'))).toBe(false);
    expect(existsSync(join(dir.path, 'limitless', 'book'))).toBe(false);
    expect(readdirSync(join(dir.path, 'limitless', 'orderbooks', 'date=2024-01-01')).sort()).toEqual(['part-222-1.jsonl', 'part-999999999-3.jsonl']);

    // Idempotent, and the sink opens the moved root and finds the books where it now writes them.
    expect(migrateJsonlLayout(dir.path)).toMatchObject({ streams: [], files: 0, bookDirs: [], bookFiles: 0 });
    const sink = new JsonlSink(dir.path);
    expect(await sink.write([...books(2), ...books(2, 'limitless', 'some-slug')])).toMatchObject({ inserted: 0, duplicates: 4 });
    await sink.close();
  });

  it('refuses to move <venue>/book/ while a live process holds its writer lock', () => {
    const part = join(dir.path, 'limitless', 'book', 'date=2024-01-01');
    mkdirSync(part, { recursive: true });
    writeFileSync(join(part, '.writer.lock'), String(process.ppid));
    expect(() => migrateJsonlLayout(dir.path)).toThrow(`is written by pid ${process.ppid}`);
    expect(existsSync(part)).toBe(true);
  });

  it('refuses while a live process still writes the earlier layout, naming it', () => {
    const part = join(dir.path, 'book', 'date=2024-01-01');
    mkdirSync(part, { recursive: true });
    writeFileSync(join(part, `part-${process.ppid}-1.jsonl.open`), '');
    let err: unknown;
    try {
      migrateJsonlLayout(dir.path);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as Error).message).toContain(`is written by pid ${process.ppid}`);
  });
});
