import { existsSync, readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ValidationError } from '@tickfleet/core';
import { tempDir, type TempDir, ManualClock, waitFor } from '@tickfleet/testkit';
import { JsonlSink } from '../index.js';
import { books, trades, T0 } from '../../test/fixtures/envelopes.js';
import { fixture, runTs } from '../../test/fixtures/processes.js';

const DAY = 86_400_000;

describe('JsonlSink files', () => {
  let dir: TempDir;
  beforeEach(() => (dir = tempDir('jsonl-')));
  afterEach(() => dir.remove());

  const files = (date: string): string[] => {
    const d = join(dir.path, 'binance', 'trades', `date=${date}`);
    return existsSync(d)
      ? readdirSync(d)
          .filter((f) => f.startsWith('part-'))
          .sort()
      : [];
  };

  it('partitions by venue, stream and UTC day; a day is finalized by one atomic rename after midnight', async () => {
    const clock = new ManualClock(T0 + DAY - 1000);
    const sink = new JsonlSink(dir.path, { clock, fsyncIntervalMs: 60_000 });
    const late = trades(3).map((e) => ({ ...e, receivedAtMs: T0 + DAY - 2000 }));
    await sink.write(late);
    expect(files('2024-01-01')).toEqual([expect.stringMatching(/^part-\d+-\d+\.jsonl\.open$/)]);
    // Midnight passes: the next record belongs to the new day.
    clock.advance(2000);
    await sink.write(trades(1, 10).map((e) => ({ ...e, receivedAtMs: T0 + DAY + 500 })));
    expect(files('2024-01-02')).toHaveLength(1);
    sink.sync();
    const done = files('2024-01-01');
    expect(done).toEqual([expect.stringMatching(/^part-\d+-\d+\.jsonl$/)]);
    const lines = readFileSync(join(dir.path, 'binance', 'trades', 'date=2024-01-01', done[0]!), 'utf8')
      .trim()
      .split('\n');
    expect(lines.map((l) => (JSON.parse(l) as { key: string }).key)).toEqual([
      'mid:trade:binance:BTC/USDT:0',
      'mid:trade:binance:BTC/USDT:1',
      'mid:trade:binance:BTC/USDT:2',
    ]);
    // The open day stays open until close.
    expect(files('2024-01-02')[0]).toMatch(/\.open$/);
    await sink.close();
    expect(files('2024-01-02')[0]).toMatch(/\.jsonl$/);
    // A replay into a finalized day finds its keys there: nothing written twice.
    const again = new JsonlSink(dir.path, { clock });
    expect(await again.write(late)).toMatchObject({ inserted: 0, duplicates: 3 });
    await again.close();
  });

  it('lets go of the writer lock of a partition it retires (a day over, or evicted), so none is left after close', async () => {
    const clock = new ManualClock(T0 + 1000);
    const sink = new JsonlSink(dir.path, { clock, fsyncIntervalMs: 60_000, maxOpenPartitions: 1 });
    const lock = (date: string): boolean => existsSync(join(dir.path, 'binance', 'trades', `date=${date}`, '.writer.lock'));
    await sink.write(trades(2).map((e) => ({ ...e, receivedAtMs: T0 + 1000 })));
    // The lease outlives the write (an idle timer lets it go later): the lock is held.
    expect(lock('2024-01-01')).toBe(true);
    // Midnight passes and the fsync sweep retires the day: its lock goes with it, at once.
    clock.advance(DAY);
    sink.sync();
    expect(files('2024-01-01')).toEqual([expect.stringMatching(/\.jsonl$/)]);
    expect(lock('2024-01-01')).toBe(false);
    // A second open partition evicts the first (maxOpenPartitions 1): the same.
    await sink.write(trades(1, 10).map((e) => ({ ...e, receivedAtMs: T0 + DAY + 500 })));
    expect(lock('2024-01-02')).toBe(true);
    await sink.write(trades(1, 20).map((e) => ({ ...e, receivedAtMs: T0 + 2 * DAY + 500 })));
    expect(files('2024-01-02')).toEqual([expect.stringMatching(/\.jsonl$/)]);
    expect(lock('2024-01-02')).toBe(false);
    await sink.close();
    expect(lock('2024-01-03')).toBe(false);
  });

  it("finalizes a crashed process's open file at start: partial last line cut, complete lines kept", async () => {
    const part = join(dir.path, 'binance', 'trades', 'date=2024-01-01');
    mkdirSync(part, { recursive: true });
    const lines = trades(2).map((e, i) => JSON.stringify({ key: `mid:trade:binance:BTC/USDT:${i}`, ...e }));
    // pid 999999999 cannot be alive.
    writeFileSync(join(part, 'part-999999999-1.jsonl.open'), `${lines[0]}\n${lines[1]}\n{"key":"mid:trade:binance:BT`);
    const sink = new JsonlSink(dir.path);
    expect(readdirSync(part)).toEqual(['part-999999999-1.jsonl']);
    expect(readFileSync(join(part, 'part-999999999-1.jsonl'), 'utf8')).toBe(`${lines[0]}\n${lines[1]}\n`);
    expect(await sink.write(trades(3))).toMatchObject({ inserted: 1, duplicates: 2 });
    await sink.close();
  });

  it('puts each venue in its own tree, error samples under their venue', async () => {
    const sink = new JsonlSink(dir.path);
    await sink.write([...trades(2), ...trades(2, 0, 'polymarket', 'TOKEN1')]);
    await sink.writeErrors([
      { atMs: T0, venue: 'binance', channel: 'trades', field: 'envelope.payload.price', message: 'bad', sample: '{}' },
      { atMs: T0, venue: null, channel: null, field: 'envelope', message: 'bad', sample: '{}' },
    ]);
    await sink.close();
    const tree = (venue: string, stream: string): string[] => readdirSync(join(dir.path, venue, stream, 'date=2024-01-01'));
    expect(tree('binance', 'trades')).toEqual([expect.stringMatching(/^part-\d+-\d+\.jsonl$/)]);
    expect(tree('polymarket', 'trades')).toHaveLength(1);
    expect(tree('binance', 'errors')).toHaveLength(1);
    expect(tree('_none', 'errors')).toHaveLength(1);
    expect(readdirSync(dir.path).sort()).toEqual(['_none', 'binance', 'polymarket']);
  });

  it('refuses a root in the earlier layout, naming the command that migrates it', () => {
    mkdirSync(join(dir.path, 'trades', 'date=2024-01-01'), { recursive: true });
    let err: unknown;
    try {
      new JsonlSink(dir.path);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as Error).message).toContain(`tickfleet data migrate-jsonl ${dir.path}`);
    expect((err as Error).message).toContain('trades/date=…');
  });

  it("writes book snapshots under the design's <venue>/orderbooks/, markets and poll statistics under their channel", async () => {
    const sink = new JsonlSink(dir.path);
    expect(await sink.write(books(3))).toMatchObject({ inserted: 3 });
    await sink.close();
    expect(readdirSync(join(dir.path, 'polymarket')).sort()).toEqual(['orderbooks']);
    const part = join(dir.path, 'polymarket', 'orderbooks', 'date=2024-01-01');
    const lines = readdirSync(part).flatMap((f) => readFileSync(join(part, f), 'utf8').trim().split('\n'));
    expect(lines.map((l) => (JSON.parse(l) as { channel: string }).channel)).toEqual(['book', 'book', 'book']);
    // The key set of the partition finds them again there.
    const again = new JsonlSink(dir.path);
    expect(await again.write(books(3))).toMatchObject({ inserted: 0, duplicates: 3 });
    await again.close();
  });

  it('refuses a root that still holds books under <venue>/book/, naming the command that moves them', () => {
    mkdirSync(join(dir.path, 'polymarket', 'book', 'date=2024-01-01'), { recursive: true });
    expect(() => new JsonlSink(dir.path)).toThrow(ValidationError);
    expect(() => new JsonlSink(dir.path)).toThrow(`tickfleet data migrate-jsonl ${dir.path}`);
    expect(() => new JsonlSink(dir.path)).toThrow('polymarket/book/date=…');
  });

  it('keeps a state snapshot per venue, replaced atomically and never by an older version', async () => {
    const sink = new JsonlSink(dir.path);
    const path = join(dir.path, 'polymarket', 'state', 'active_instruments.snapshot.json');
    const read = (): unknown => JSON.parse(readFileSync(path, 'utf8'));
    expect(await sink.writeState('polymarket', 'active_instruments.snapshot.json', { version: 2, instruments: { a: 1 } } as { version: number })).toBe(true);
    expect(read()).toEqual({ version: 2, instruments: { a: 1 } });
    expect(await sink.writeState('polymarket', 'active_instruments.snapshot.json', { version: 1, instruments: {} } as { version: number })).toBe(false);
    expect(read()).toEqual({ version: 2, instruments: { a: 1 } });
    expect(await sink.writeState('polymarket', 'active_instruments.snapshot.json', { version: 3, instruments: { b: 2 } } as { version: number })).toBe(true);
    expect(read()).toEqual({ version: 3, instruments: { b: 2 } });
    // Only the snapshot: no temporary file left beside it, and the sink's streams are untouched.
    expect(readdirSync(join(dir.path, 'polymarket', 'state'))).toEqual(['active_instruments.snapshot.json']);
    await expect(sink.writeState('../x', 'a.json', { version: 1 })).rejects.toThrow('invalid venue');
    await expect(sink.writeState('polymarket', '../a.json', { version: 1 })).rejects.toThrow('invalid state file name');
    await sink.close();
    // A root with state snapshots opens as any other.
    const again = new JsonlSink(dir.path);
    await again.close();
  });

  it('two processes writing the same keys into one root store each record once', async () => {
    const go = join(dir.path, 'go');
    const root = join(dir.path, 'root');
    const total = 2000;
    const writers = ['up', 'down'].map((order) =>
      runTs(fixture('jsonl-writer.ts'), [
        '--root',
        root,
        '--ready',
        join(dir.path, order),
        '--go',
        go,
        '--total',
        String(total),
        '--batch',
        '10',
        '--order',
        order,
        '--interval-ms',
        '2',
      ]),
    );
    // both sinks open before either writes, and they write longer than a lease lasts while the other waits, so both get turns
    await waitFor(() => existsSync(join(dir.path, 'up')) && existsSync(join(dir.path, 'down')), 'both writers ready', { timeoutMs: 45_000 });
    writeFileSync(go, '');
    const exits = await Promise.all(writers.map((w) => w.exited));
    expect(exits.map((e) => e.code)).toEqual([0, 0]);
    const counts = writers.map((w) =>
      w.lines
        .join('')
        .match(/^inserted (\d+) duplicates (\d+)$/)!
        .slice(1)
        .map(Number),
    );
    // every record was stored by exactly one of them; the other found it stored
    expect(counts.reduce((a, [inserted]) => a + inserted!, 0)).toBe(total);
    expect(counts.map(([inserted, dup]) => inserted! + dup!)).toEqual([total, total]);
    // both wrote some (they took turns), and the files hold each key once
    expect(counts.every(([inserted]) => inserted! > 0)).toBe(true);
    const part = join(root, 'binance', 'trades', 'date=2024-01-01');
    const keys = readdirSync(part)
      .filter((f) => f.endsWith('.jsonl'))
      .flatMap((f) => readFileSync(join(part, f), 'utf8').trim().split('\n'))
      .map((l) => (JSON.parse(l) as { key: string }).key);
    expect(keys).toHaveLength(total);
    expect(new Set(keys).size).toBe(total);
    // every file was finalized at close (none left open), and no lock is left behind
    expect(readdirSync(part).filter((f) => !f.endsWith('.jsonl'))).toEqual([]);
  }, 60_000);
});
