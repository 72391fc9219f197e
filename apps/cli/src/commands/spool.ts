import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Command } from 'commander';
import { formatDurationMs, StoreUnavailableError } from '@tickfleet/core';
import { DEFAULT_SPOOL_DIR, listSegments, oldestReceivedAtMs, ReplayWorker, Spool } from '@tickfleet/sinks';
import { isoOrDash, printJson, printTable } from '../output.js';
import { sinkOption, withSink } from './data.js';

interface SpoolDirOptions {
  spoolDir: string;
  json?: boolean;
}

function spoolDirOption(cmd: Command): Command {
  return cmd.option('--spool-dir <dir>', 'spool directory', process.env.TICKFLEET_SPOOL_DIR ?? DEFAULT_SPOOL_DIR);
}

export function registerSpool(program: Command): void {
  const spool = program.command('spool').description('the durable outage spool behind the primary sink');

  spoolDirOption(spool.command('status').description('segments, bytes and oldest record age of a spool').option('--json', 'print JSON')).action(
    (opts: SpoolDirOptions) => {
      const segments = listSegments(opts.spoolDir);
      const bytes = segments.reduce((n, s) => n + s.bytes, 0);
      const oldest = oldestReceivedAtMs(opts.spoolDir);
      const lockPath = join(opts.spoolDir, 'spool.lock');
      const status = {
        dir: opts.spoolDir,
        segments: segments.filter((s) => s.bytes > 0).length,
        bytes,
        oldestReceivedAtMs: oldest,
        oldestAgeMs: oldest === null ? null : Math.max(0, Date.now() - oldest),
        writerPid: existsSync(lockPath) ? Number(readFileSync(lockPath, 'utf8').trim()) || null : null,
        files: segments,
      };
      if (opts.json) return printJson(status);
      printTable(
        ['dir', 'segments', 'bytes', 'oldest record', 'age', 'writer pid'],
        [[status.dir, status.segments, status.bytes, isoOrDash(oldest), status.oldestAgeMs === null ? '-' : formatDurationMs(status.oldestAgeMs), status.writerPid]],
      );
    },
  );

  sinkOption(
    spoolDirOption(
      spool
        .command('replay')
        .description('drain the spool into the sink now (the spool must not be in use by a running worker)')
        .option('--json', 'print the result as JSON'),
    ),
  ).action(async (opts: SpoolDirOptions & { sink: string }) => {
    const result = await withSink(opts.sink, async (sink) => {
      const s = Spool.open({ dir: opts.spoolDir });
      try {
        const before = s.totalBytes;
        const tty = process.stderr.isTTY === true;
        const started = Date.now();
        const timer = tty
          ? setInterval(() => {
              const left = s.totalBytes;
              const rate = (before - left) / Math.max(0.001, (Date.now() - started) / 1000);
              const eta = rate > 0 ? formatDurationMs((left / rate) * 1000) : '?';
              process.stderr.write(`\rreplaying: ${before - left}/${before} bytes, ETA ${eta}   `);
            }, 250)
          : undefined;
        const r = await new ReplayWorker(s, sink, { batchSize: 1000 }).drain().finally(() => {
          if (!timer) return;
          clearInterval(timer);
          process.stderr.write('\n');
        });
        if (r.error) throw new StoreUnavailableError(`replay stopped, the spool keeps ${s.totalBytes} bytes: ${r.error.message}`, { cause: r.error });
        return { ...r, bytesLeft: s.totalBytes };
      } finally {
        await s.close();
      }
    });
    if (opts.json) return printJson(result);
    printTable(['segments', 'records', 'inserted', 'duplicates', 'rejected', 'bytes left'], [[result.segments, result.records, result.inserted, result.duplicates, result.rejected, result.bytesLeft]]);
  });
}
