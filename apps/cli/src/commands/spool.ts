import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { type Command } from 'commander';
import { formatDurationMs, SinkUnavailableError, SpoolLockedError, ValidationError } from '@tickfleet/core';
import { listSegments, oldestReceivedAtMs, ReplayWorker, Spool, type DrainResult, type Sink } from '@tickfleet/sinks';
import { cliEnv } from '../cli-env.js';
import { lockedSpoolError } from '../edge-errors.js';
import { isoOrDash, jsonOption, printJson, printTable } from '../output.js';
import { sinkOption, withSink } from './data.js';

interface SpoolDirOptions {
  spoolDir: string;
  json?: boolean;
}

function spoolDirOption(cmd: Command): Command {
  return cmd.option('--spool-dir <dir>', 'spool directory', cliEnv('TICKFLEET_SPOOL_DIR').TICKFLEET_SPOOL_DIR);
}

export function registerSpool(program: Command): void {
  const spool = program.command('spool').description('the durable outage spool behind the primary sink');

  spoolDirOption(
    spool.command('status').description('segments, bytes and oldest record age of a spool and of the worker slots under it').addOption(jsonOption()),
  ).action((opts: SpoolDirOptions) => {
    const parts = spoolDirs(opts.spoolDir).map(dirStatus);
    const base = parts[0]!;
    const slots = parts.slice(1);
    const oldest = Math.min(...parts.map((p) => p.oldestReceivedAtMs ?? Infinity));
    const status = {
      ...base,
      segments: parts.reduce((n, p) => n + p.segments, 0),
      bytes: parts.reduce((n, p) => n + p.bytes, 0),
      oldestReceivedAtMs: Number.isFinite(oldest) ? oldest : null,
      oldestAgeMs: Number.isFinite(oldest) ? Math.max(0, Date.now() - oldest) : null,
      ...(slots.length > 0 ? { slots } : {}),
    };
    if (opts.json) return printJson(status);
    printTable(
      ['dir', 'segments', 'bytes', 'oldest record', 'age', 'writer pid'],
      parts.map((p) => [
        p.dir,
        p.segments,
        p.bytes,
        isoOrDash(p.oldestReceivedAtMs),
        p.oldestAgeMs === null ? '-' : formatDurationMs(p.oldestAgeMs),
        p.writerPid,
      ]),
    );
  });

  sinkOption(
    spoolDirOption(
      spool
        .command('replay')
        .description('drain the spool into the sink now (the spool must not be in use by a running worker)')
        .addOption(jsonOption('print the result as JSON')),
    ),
  ).action(async (opts: SpoolDirOptions & { sink: string }) => {
    const dirs = spoolDirs(opts.spoolDir).filter((dir, i) => i === 0 || listSegments(dir).some((seg) => seg.bytes > 0));
    const held: Array<{ dir: string; reason: string }> = [];
    const totals = { segments: 0, records: 0, inserted: 0, duplicates: 0, rejected: 0, bytesLeft: 0 };
    await withSink(opts.sink, async (sink) => {
      for (const dir of dirs) {
        let s: Spool;
        try {
          s = Spool.open({ dir });
        } catch (err) {
          if (!(err instanceof SpoolLockedError)) throw err;
          // A live worker holds this slot and replays it itself; with a single spool that is an error.
          const locked = lockedSpoolError(err);
          if (dirs.length === 1) throw locked;
          held.push({ dir, reason: locked.message });
          continue;
        }
        try {
          const r = await drainWithProgress(s, sink);
          totals.segments += r.segments;
          totals.records += r.records;
          totals.inserted += r.inserted;
          totals.duplicates += r.duplicates;
          totals.rejected += r.rejected;
          totals.bytesLeft += s.totalBytes;
        } finally {
          await s.close();
        }
      }
    });
    const result = { ...totals, ...(held.length > 0 ? { skipped: held } : {}) };
    if (opts.json) return printJson(result);
    printTable(
      ['segments', 'records', 'inserted', 'duplicates', 'rejected', 'bytes left'],
      [[result.segments, result.records, result.inserted, result.duplicates, result.rejected, result.bytesLeft]],
    );
    for (const h of held) process.stdout.write(`skipped ${h.dir}: ${h.reason}\n`);
  });
}

/** The spool directory and the `worker-<n>` slots workers create under it, slots in number order. */
function spoolDirs(base: string): string[] {
  // A path that exists but is no directory (`/dev/null`, a file) is a bad --spool-dir, not a crash.
  if (existsSync(base) && !statSync(base).isDirectory()) throw new ValidationError('--spool-dir (TICKFLEET_SPOOL_DIR)', 'a directory', base);
  const slots = existsSync(base)
    ? readdirSync(base, { withFileTypes: true })
        .filter((d) => d.isDirectory() && /^worker-\d+$/.test(d.name))
        .map((d) => d.name)
        .sort((a, b) => Number(a.slice(7)) - Number(b.slice(7)))
    : [];
  return [base, ...slots.map((name) => join(base, name))];
}

function dirStatus(dir: string): {
  dir: string;
  segments: number;
  bytes: number;
  oldestReceivedAtMs: number | null;
  oldestAgeMs: number | null;
  writerPid: number | null;
  files: ReturnType<typeof listSegments>;
} {
  const files = listSegments(dir);
  const oldest = oldestReceivedAtMs(dir);
  const lockPath = join(dir, 'spool.lock');
  return {
    dir,
    segments: files.filter((f) => f.bytes > 0).length,
    bytes: files.reduce((n, f) => n + f.bytes, 0),
    oldestReceivedAtMs: oldest,
    oldestAgeMs: oldest === null ? null : Math.max(0, Date.now() - oldest),
    writerPid: existsSync(lockPath) ? Number(readFileSync(lockPath, 'utf8').trim()) || null : null,
    files,
  };
}

/** Drains one spool into the sink, with a progress line (bytes, ETA) on a TTY. */
async function drainWithProgress(s: Spool, sink: Sink): Promise<DrainResult> {
  const before = s.totalBytes;
  const tty = process.stderr.isTTY === true;
  const started = Date.now();
  const timer = tty
    ? setInterval(() => {
        const left = s.totalBytes;
        const rate = (before - left) / Math.max(0.001, (Date.now() - started) / 1000);
        const eta = rate > 0 ? formatDurationMs((left / rate) * 1000) : '?';
        process.stderr.write(`\r${s.dir}: ${before - left}/${before} bytes, ETA ${eta}   `);
      }, 250)
    : undefined;
  const r = await new ReplayWorker(s, sink, { batchSize: 1000 }).drain().finally(() => {
    if (!timer) return;
    clearInterval(timer);
    process.stderr.write('\n');
  });
  if (r.error) {
    const { adapter, attempts, reason } = r.error;
    throw new SinkUnavailableError(adapter, attempts, reason, `replay stopped, ${s.dir} keeps ${s.totalBytes} bytes: ${r.error.message}`, { cause: r.error });
  }
  return r;
}
