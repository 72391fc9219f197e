import { existsSync, readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir, type TempDir, ManualClock } from '@tickfleet/testkit';
import { JsonlSink } from '../index.js';
import { trades, T0 } from '../../test/fixtures/envelopes.js';

const DAY = 86_400_000;

describe('JsonlSink files', () => {
  let dir: TempDir;
  beforeEach(() => (dir = tempDir('jsonl-')));
  afterEach(() => dir.remove());

  const files = (date: string): string[] => {
    const d = join(dir.path, 'trades', `date=${date}`);
    return existsSync(d) ? readdirSync(d).sort() : [];
  };

  it('partitions by stream and UTC day; a day is finalized by one atomic rename after midnight', async () => {
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
    const lines = readFileSync(join(dir.path, 'trades', 'date=2024-01-01', done[0]!), 'utf8')
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

  it("finalizes a crashed process's open file at start: partial last line cut, complete lines kept", async () => {
    const part = join(dir.path, 'trades', 'date=2024-01-01');
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
});
