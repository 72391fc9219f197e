import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { tradeEnvelope } from '@tickfleet/core';
import { candleEnvelope, SqliteSink, Spool } from '@tickfleet/sinks';
import { buildProgram } from '../src/program.js';
import { openBadInputFleet, type BadInputFleet } from './bad-input-fixture.js';

/**
 * Every command that declares `--json` prints one JSON document on stdout, run as scripts run it
 * (the real binary, `--json` last) against a real Redis and SQLite store and sink holding data,
 * so lists are not empty. The commands come from walking the program tree, not from a list kept
 * by hand: a new command declaring `--json` without a case in CASES fails the first test by name.
 */

const T0 = Date.UTC(2024, 0, 1);
const M = 60_000;
const JOB = 'binance:BTC/USDT:1m:ohlcv';
/** Stored candles of JOB, minute offsets from T0: a hole at minutes 3 and 4. */
const STORED_MINUTES = [0, 1, 2, 5, 6];
const SPOOLED_TRADES = 20;
/** A JSONL sink root in the earlier `<stream>/date=…` layout, seeded before the cases run. */
let legacyJsonlRoot = '';

/** What the cases learn from earlier ones (they run in CASES order). */
interface Seen {
  /** Ids of the backfills `backfill start` created, in order. */
  backfills: Array<{ id: string; unitsTotal: number }>;
}

interface JsonCase {
  /** Each command line to run, its words included; `--json` is appended last, where the scripts put it. */
  runs: (seen: Seen) => string[][];
  /** The printed document: its top-level shape and what the seeded state makes it hold. */
  check: (out: unknown, seen: Seen) => void;
}

type Obj = Record<string, unknown>;
const asObject = (out: unknown): Obj => {
  expect(out).toEqual(expect.any(Object));
  expect(Array.isArray(out)).toBe(false);
  return out as Obj;
};
const asArray = (out: unknown): Obj[] => {
  expect(Array.isArray(out)).toBe(true);
  return out as Obj[];
};

/** Keyed by command path; exactly the commands that declare `--json` (checked against the tree). */
const CASES: Record<string, JsonCase> = {
  'connectors upsert': {
    runs: () => [['connectors', 'upsert', 'polymarket', '--base-url', 'http://127.0.0.1:1', '--limit', '50']],
    check: (out) => expect(asObject(out)).toMatchObject({ venue: 'polymarket', status: 'active', rateLimit: { limit: 50 } }),
  },
  venues: {
    runs: () => [['venues', '--no-ccxt']],
    check: (out) => expect((asObject(out) as { venues: Array<{ venue: string }> }).venues.map((v) => v.venue)).toContain('kraken'),
  },
  'connectors list': {
    runs: () => [['connectors', 'list']],
    check: (out) => expect(asArray(out).map((c) => c.venue)).toEqual(['binance', 'polygon', 'polymarket']),
  },
  'connectors show': {
    runs: () => [['connectors', 'show', 'binance']],
    check: (out) => expect(asObject(out)).toMatchObject({ venue: 'binance', maxInflight: 4, rateLimit: { limit: 1200 } }),
  },
  'connectors pause': {
    runs: () => [['connectors', 'pause', 'polymarket']],
    check: (out) => expect(asObject(out)).toMatchObject({ venue: 'polymarket', status: 'paused' }),
  },
  'connectors resume': {
    runs: () => [['connectors', 'resume', 'polymarket']],
    check: (out) => expect(asObject(out)).toMatchObject({ venue: 'polymarket', status: 'active' }),
  },
  'connectors disable': {
    runs: () => [['connectors', 'disable', 'polymarket']],
    check: (out) => expect(asObject(out)).toMatchObject({ venue: 'polymarket', status: 'disabled' }),
  },
  'jobs add': {
    runs: () => [['jobs', 'add', 'binance', 'ohlcv', 'ETH/USDT', '--timeframe', '1m']],
    check: (out) => expect(asObject(out)).toMatchObject({ id: 'binance:ETH/USDT:1m:ohlcv', enabled: true }),
  },
  'jobs list': {
    runs: () => [
      ['jobs', 'list'],
      ['jobs', 'list', '--venue', 'binance'],
    ],
    check: (out) => expect(asArray(out).map((j) => j.id)).toEqual(expect.arrayContaining([JOB, 'binance:ETH/USDT:1m:ohlcv'])),
  },
  'jobs show': {
    runs: () => [['jobs', 'show', JOB]],
    check: (out) => expect(asObject(out)).toMatchObject({ id: JOB, since: T0 }),
  },
  'jobs disable': {
    runs: () => [['jobs', 'disable', 'binance:ETH/USDT:1m:ohlcv']],
    check: (out) => expect(asObject(out)).toMatchObject({ id: 'binance:ETH/USDT:1m:ohlcv', enabled: false }),
  },
  'jobs enable': {
    runs: () => [['jobs', 'enable', 'binance:ETH/USDT:1m:ohlcv']],
    check: (out) => expect(asObject(out)).toMatchObject({ id: 'binance:ETH/USDT:1m:ohlcv', enabled: true }),
  },
  'universes set': {
    runs: () => [['universes', 'set', 'binance', 'majors', 'BTC/USDT', 'ETH/USDT']],
    check: (out) => expect(asObject(out)).toMatchObject({ venue: 'binance', name: 'majors', symbols: ['BTC/USDT', 'ETH/USDT'] }),
  },
  'universes list': {
    runs: () => [
      ['universes', 'list'],
      ['universes', 'list', '--venue', 'binance'],
    ],
    check: (out) => expect(asArray(out).map((u) => [u.venue, u.name])).toEqual([['binance', 'majors']]),
  },
  'universes show': {
    runs: () => [['universes', 'show', 'binance', 'majors']],
    check: (out) => expect(asObject(out)).toMatchObject({ venue: 'binance', name: 'majors', symbols: ['BTC/USDT', 'ETH/USDT'] }),
  },
  'universes remove': {
    runs: () => [['universes', 'remove', 'binance', 'majors']],
    check: (out) => expect(asObject(out)).toEqual({ venue: 'binance', name: 'majors', removed: true }),
  },
  'streams add': {
    runs: () => [['streams', 'add', 'majors', '--venue', 'binance', '--symbols', 'BTC/USDT,ETH/USDT', '--channels', 'trades,book']],
    check: (out) => expect(asObject(out)).toMatchObject({ name: 'majors', venue: 'binance', symbols: ['BTC/USDT', 'ETH/USDT'], bookDepth: 1000, version: 1 }),
  },
  'streams list': {
    runs: () => [['streams', 'list']],
    check: (out) => expect(asArray(out).map((s) => [s.name, s.enabled])).toEqual([['majors', true]]),
  },
  'streams show': {
    runs: () => [['streams', 'show', 'majors']],
    check: (out) => expect(asObject(out)).toMatchObject({ name: 'majors', channels: ['trades', 'book'] }),
  },
  'streams disable': {
    runs: () => [['streams', 'disable', 'majors']],
    check: (out) => expect(asObject(out)).toMatchObject({ name: 'majors', enabled: false, version: 2 }),
  },
  'streams enable': {
    runs: () => [['streams', 'enable', 'majors']],
    check: (out) => expect(asObject(out)).toMatchObject({ name: 'majors', enabled: true, version: 3 }),
  },
  'gaps scan': {
    runs: () => [['gaps', 'scan', JOB]],
    check: (out) => expect(asObject(out)).toMatchObject({ jobId: JOB, recorded: 1, open: [{ fromMs: T0 + 3 * M, toMs: T0 + 5 * M }] }),
  },
  // The group's default subcommand: `gaps [jobId]` is `gaps list [jobId]`.
  'gaps list': {
    runs: () => [['gaps', JOB], ['gaps'], ['gaps', 'list', '--all']],
    check: (out) => expect(asArray(out).map((g) => [g.jobId, g.fromMs, g.kind])).toEqual([[JOB, T0 + 3 * M, 'missing']]),
  },
  'data count': {
    runs: () => [['data', 'count', 'binance', 'BTC/USDT', '--timeframe', '1m']],
    check: (out) => expect(asObject(out)).toMatchObject({ venue: 'binance', count: STORED_MINUTES.length, openGaps: 1, missingCandles: 2 }),
  },
  // The group's default subcommand: `backfill <venue> <symbol> …` is `backfill start <venue> <symbol> …`.
  'backfill start': {
    runs: () => [
      ['backfill', 'binance', 'BTC/USDT', '--timeframe', '1m', '--from', '2024-01-02', '--to', '2024-01-02T02:00:00Z'],
      ['backfill', '--gaps', JOB],
      ['backfill', 'start', 'binance', 'BTC/USDT', '--timeframe', '1m', '--from', '2024-01-03', '--to', '2024-01-03T01:00:00Z'],
    ],
    check: (out, seen) => {
      const bf = asObject(out);
      seen.backfills.push({ id: bf.id as string, unitsTotal: bf.unitsTotal as number });
      expect(bf).toMatchObject({ id: expect.stringMatching(/^bf-/), jobId: JOB, status: 'pending', unitsDone: 0 });
      expect(bf.unitsTotal).toBeGreaterThan(0);
    },
  },
  'backfill status': {
    runs: (seen) => seen.backfills.map((b) => ['backfill', 'status', b.id]),
    check: (out, seen) => {
      const bf = asObject(out);
      expect(seen.backfills.map((b) => b.id)).toContain(bf.id);
      expect(bf).toMatchObject({ jobId: JOB, failedChunks: [] });
    },
  },
  'backfill list': {
    runs: () => [['backfill', 'list']],
    check: (out, seen) => expect(asArray(out).map((b) => b.id)).toEqual(expect.arrayContaining(seen.backfills.map((b) => b.id))),
  },
  status: {
    runs: () => [['status']],
    check: (out, seen) => {
      const status = asObject(out);
      expect((status.venues as Obj[]).map((v) => v.venue)).toEqual(['binance', 'polygon', 'polymarket']);
      // Every unit of both backfills waits in binance's queue: no worker runs.
      const units = seen.backfills.reduce((n, b) => n + b.unitsTotal, 0);
      const binance = (status.venues as Obj[])[0] as { queue: { waiting: number; prioritized: number } };
      expect(binance.queue.waiting + binance.queue.prioritized).toBe(units);
      expect(status.totals).toEqual(expect.any(Object));
      expect(status.streams).toEqual([
        expect.objectContaining({ name: 'majors', venue: 'binance', symbolCount: 2, channels: ['trades', 'book'], enabled: true }),
      ]);
    },
  },
  'streams remove': {
    runs: () => [['streams', 'remove', 'majors']],
    check: (out) => expect(asObject(out)).toEqual({ name: 'majors', removed: true }),
  },
  queues: {
    runs: () => [['queues']],
    check: (out, seen) => {
      const binance = asArray(out).find((r) => r.venue === 'binance') as { waiting: number; prioritized: number } | undefined;
      expect(binance && binance.waiting + binance.prioritized).toBe(seen.backfills.reduce((n, b) => n + b.unitsTotal, 0));
    },
  },
  'backfill cancel': {
    runs: (seen) => seen.backfills.map((b) => ['backfill', 'cancel', b.id]),
    check: (out, seen) => {
      const bf = asObject(out);
      // No worker ran: every unit was still queued and is removed.
      expect(bf).toMatchObject({ status: 'cancelled', removedUnits: seen.backfills.find((b) => b.id === bf.id)?.unitsTotal });
    },
  },
  'units retry-failed': {
    runs: () => [['units', 'retry-failed', 'binance']],
    check: (out) => expect(asObject(out)).toEqual({ venue: 'binance', queue: '{binance}', retried: 0, failedBefore: 0, failedAfter: 0 }),
  },
  // No worker runs here: nothing is active, on one venue or on every connector's.
  'units active': {
    runs: () => [
      ['units', 'active', 'binance'],
      ['units', 'active'],
    ],
    check: (out) => expect(asArray(out)).toEqual([]),
  },
  'units clean': {
    runs: () => [['units', 'clean', 'binance', '--older-than', '1d']],
    check: (out) => expect(asObject(out)).toMatchObject({ venue: 'binance', olderThanMs: 86_400_000, removed: { completed: 0, failed: 0 }, total: 0 }),
  },
  'spool status': {
    runs: () => [['spool', 'status']],
    check: (out) => {
      const s = asObject(out);
      expect(s.segments).toBeGreaterThan(0);
      expect(s.oldestReceivedAtMs).toBe(T0);
    },
  },
  // A JSONL root in the earlier layout (seeded below): two venues' trades in one file.
  'data migrate-jsonl': {
    runs: () => [['data', 'migrate-jsonl', legacyJsonlRoot]],
    check: (out) => expect(asObject(out)).toMatchObject({ streams: ['trades'], files: 1, records: { binance: 2, polymarket: 1 } }),
  },
  'spool replay': {
    runs: () => [['spool', 'replay']],
    check: (out) => expect(asObject(out)).toMatchObject({ records: SPOOLED_TRADES, inserted: SPOOLED_TRADES, bytesLeft: 0 }),
  },
};

/** Every command below `cmd`, depth first. */
function commandsUnder(cmd: Command): Command[] {
  return cmd.commands.flatMap((sub) => [sub, ...commandsUnder(sub)]);
}

/** `backfill status` for the command `tickfleet backfill status`. */
function pathOf(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c?.parent; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

const longFlags = (cmd: Command): string[] => cmd.options.flatMap((o) => (o.long ? [o.long] : []));

const program = await buildProgram();

describe('--json output of every command that declares it', () => {
  const all = commandsUnder(program);

  it('CASES covers exactly the commands declaring --json, and no command can take a subcommand’s option', () => {
    const declaring = all.filter((c) => longFlags(c).includes('--json')).map(pathOf);
    expect({ 'declare --json but have no case': declaring.filter((p) => !(p in CASES)) }).toEqual({ 'declare --json but have no case': [] });
    expect({ 'have a case but declare no --json': Object.keys(CASES).filter((p) => !declaring.includes(p)) }).toEqual({
      'have a case but declare no --json': [],
    });
    // commander lets a command claim its options anywhere on the line, a subcommand's part
    // included: a group with options of its own takes its subcommands' (`backfill status <id>
    // --json` printed the table), and a name an ancestor declares never reaches the command.
    const groupsWithOptions = all.filter((c) => c.commands.length > 0 && c.options.length > 0).map(pathOf);
    expect({ 'groups with options': groupsWithOptions }).toEqual({ 'groups with options': [] });
    const shadowed = all.flatMap((c) => {
      const above = new Set<string>();
      for (let p = c.parent; p; p = p.parent) for (const f of longFlags(p)) above.add(f);
      return longFlags(c)
        .filter((f) => above.has(f))
        .map((f) => `${pathOf(c)} ${f}`);
    });
    expect({ 'options an ancestor declares': shadowed }).toEqual({ 'options an ancestor declares': [] });
  });

  describe('run against a fleet holding data', () => {
    let fleet: BadInputFleet;

    beforeAll(async () => {
      // Connectors binance and polygon and the job binance:BTC/USDT:1m:ohlcv since 2024-01-01.
      fleet = await openBadInputFleet();
      // The fixture's TICKFLEET_SINK_URL and TICKFLEET_SPOOL_DIR.
      const sink = new SqliteSink(fleet.dir.file('data.db'));
      await sink.write(
        STORED_MINUTES.map((m) =>
          candleEnvelope(
            { venue: 'binance', symbol: 'BTC/USDT', timeframe: '1m', openTime: T0 + m * M, open: '1', high: '1', low: '1', close: '1', volume: '1' },
            T0 + (m + 1) * M,
          ),
        ),
      );
      await sink.close();
      const spool = Spool.open({ dir: fleet.dir.file('spool') });
      await spool.append(
        Array.from({ length: SPOOLED_TRADES }, (_, i) =>
          tradeEnvelope({ venue: 'binance', symbol: 'BTC/USDT', tradeId: String(i), timeMs: T0 + i, price: '1', size: '1' }, `trade:${i}`, T0 + i),
        ),
      );
      await spool.close();
      legacyJsonlRoot = fleet.dir.file('jsonl-legacy');
      const legacy = join(legacyJsonlRoot, 'trades', 'date=2024-01-01');
      mkdirSync(legacy, { recursive: true });
      const lines = [
        ['binance', 'BTC/USDT', 'a'],
        ['polymarket', 'TOKEN1', 'b'],
        ['binance', 'BTC/USDT', 'c'],
      ].map(([venue, symbol, id]) => {
        const e = tradeEnvelope({ venue: venue!, symbol: symbol!, tradeId: id!, timeMs: T0, price: '1', size: '1' }, `trade:${id}`, T0);
        return JSON.stringify({ key: `mid:${e.messageId}`, ...e });
      });
      writeFileSync(join(legacy, 'part-111-1.jsonl'), `${lines.join('\n')}\n`);
    }, 180_000);
    afterAll(async () => {
      await fleet?.close();
    });

    it('prints one JSON document on stdout, holding what the fleet holds', async () => {
      const seen: Seen = { backfills: [] };
      const failures: string[] = [];
      let runs = 0;
      // In sequence: later cases read what earlier ones created, and the machine is shared.
      for (const [path, c] of Object.entries(CASES)) {
        const lines = c.runs(seen);
        if (lines.length === 0) failures.push(`${path}: nothing to run (an earlier case failed)`);
        for (const words of lines) {
          const args = [...words, '--json'];
          const r = await fleet.run(args);
          runs++;
          let out: unknown;
          try {
            if (r.code !== 0) throw new Error(`exit ${r.code}`);
            out = JSON.parse(r.stdout);
          } catch (err) {
            failures.push(`tickfleet ${args.join(' ')}: ${(err as Error).message}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
            continue;
          }
          try {
            c.check(out, seen);
          } catch (err) {
            failures.push(`tickfleet ${args.join(' ')}: ${(err as Error).message}`);
          }
        }
      }
      expect(failures).toEqual([]);
      expect(runs).toBeGreaterThanOrEqual(Object.keys(CASES).length);
    }, 600_000);
  });
});
