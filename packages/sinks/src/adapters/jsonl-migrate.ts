import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmdirSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ValidationError } from '@tickfleet/core';
import { pidAlive } from '../internal/pid-alive.js';
import { finalizeOrphans, legacyStreams, NO_VENUE_DIR, oldBookDirs, streamDir, unlinkQuiet } from './jsonl-sink.js';

const PART_RE = /^part-\d+-\d+\.jsonl$/;

/** What `migrateJsonlLayout` moved. */
export interface JsonlMigration {
  root: string;
  /** Earlier-layout stream directories found (`trades`, `book`, `errors`, …). */
  streams: string[];
  /** Files split into the per-venue tree (and removed from the earlier one). */
  files: number;
  /** Lines moved, per venue directory. */
  records: Record<string, number>;
  /** `<venue>/book` directories whose files moved to `<venue>/orderbooks/` (the design's name). */
  bookDirs: string[];
  /** Files moved out of them (each whole, by rename). */
  bookFiles: number;
}

/**
 * Moves a JSONL root from the earlier layout `<root>/<stream>/date=D/part-*.jsonl` (every venue in one
 * file) to the per-venue layout `<root>/<venue>/<stream>/date=D/part-*.jsonl` that JsonlSink writes,
 * book snapshots under `orderbooks/`; then renames each per-venue `<venue>/book/date=D/` file into
 * `<venue>/orderbooks/date=D/` (the design's name for the stream).
 * Each file is split by its lines' `venue` (error samples without one go to `_none`), each part written
 * under the file's own name (to a temporary name, fsynced, then renamed) before the source is removed,
 * so a run that stops half-way is finished by running it again, and a run on a migrated root moves
 * nothing. Open files of dead writers are finalized first; a live writer's makes it refuse.
 */
export function migrateJsonlLayout(root: string): JsonlMigration {
  const streams = legacyStreams(root);
  const out: JsonlMigration = { root, streams, files: 0, records: {}, bookDirs: [], bookFiles: 0 };
  for (const stream of streams) {
    for (const part of readdirSync(join(root, stream))) {
      const dateDir = join(root, stream, part);
      refuseLiveWriter(dateDir);
      finalizeOrphans(dateDir);
      for (const name of readdirSync(dateDir).filter((n) => PART_RE.test(n))) {
        const byVenue = new Map<string, string[]>();
        for (const line of readFileSync(join(dateDir, name), 'utf8').split('\n')) {
          if (!line) continue;
          const venue = venueOf(line);
          if (streams.includes(venue)) {
            throw new ValidationError('jsonl root', 'venue names distinct from its stream directories', `${root}: venue ${venue} and stream ${venue}/date=…`);
          }
          byVenue.set(venue, [...(byVenue.get(venue) ?? []), line]);
        }
        for (const [venue, lines] of byVenue) {
          const target = join(root, venue, streamDir(stream), part);
          mkdirSync(target, { recursive: true });
          writeDurably(join(target, name), `${lines.join('\n')}\n`);
          out.records[venue] = (out.records[venue] ?? 0) + lines.length;
        }
        unlinkSync(join(dateDir, name));
        out.files += 1;
      }
      removeIfEmpty(dateDir);
    }
    removeIfEmpty(join(root, stream));
  }
  moveBookDirs(root, out);
  return out;
}

/** Renames the files of every `<venue>/book/date=D/` into `<venue>/orderbooks/date=D/`, then removes what is left empty. */
function moveBookDirs(root: string, out: JsonlMigration): void {
  for (const dir of oldBookDirs(root)) {
    const from = join(root, dir);
    for (const part of readdirSync(from)) {
      const dateDir = join(from, part);
      refuseLiveWriter(dateDir);
      finalizeOrphans(dateDir);
      const target = join(root, dirname(dir), streamDir('book'), part);
      mkdirSync(target, { recursive: true });
      for (const name of readdirSync(dateDir).filter((n) => PART_RE.test(n))) {
        renameSync(join(dateDir, name), join(target, name));
        out.bookFiles += 1;
      }
      // A dead writer's lock and a gone waiter's request (the live ones were refused above).
      for (const name of ['.writer.lock', '.writer.want']) unlinkQuiet(join(dateDir, name));
      removeIfEmpty(dateDir);
    }
    removeIfEmpty(from);
    out.bookDirs.push(dir);
  }
}

/** Throws while a live process writes `dateDir` (an open file of its own, or the partition's writer lock). */
function refuseLiveWriter(dateDir: string): void {
  const writer = liveWriter(dateDir);
  if (writer !== undefined) {
    throw new ValidationError(
      'jsonl root',
      'no live writer while it is migrated (stop the workers writing it first)',
      `${dateDir} is written by pid ${writer}`,
    );
  }
}

function venueOf(line: string): string {
  try {
    const venue = (JSON.parse(line) as { venue?: unknown }).venue;
    return typeof venue === 'string' && venue !== '' ? venue : NO_VENUE_DIR;
  } catch {
    // Finalized files hold complete lines only; anything else is kept, not judged.
    return NO_VENUE_DIR;
  }
}

/** The pid of a live process with an open file in `dir`, or holding its writer lock, if any. */
function liveWriter(dir: string): number | undefined {
  for (const name of readdirSync(dir)) {
    const m = /^part-(\d+)-\d+\.jsonl\.open$/.exec(name);
    if (m && Number(m[1]) !== process.pid && pidAlive(Number(m[1]))) return Number(m[1]);
  }
  const holder = readPid(join(dir, '.writer.lock'));
  return holder !== undefined && holder !== process.pid && pidAlive(holder) ? holder : undefined;
}

function readPid(path: string): number | undefined {
  try {
    const pid = Number(readFileSync(path, 'utf8').trim());
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function writeDurably(path: string, text: string): void {
  const tmp = `${path}.migrating`;
  const fd = openSync(tmp, 'w');
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}

function removeIfEmpty(dir: string): void {
  if (readdirSync(dir).length === 0) rmdirSync(dir);
}
