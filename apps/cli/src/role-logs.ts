import { closeSync, copyFileSync, existsSync, openSync, readdirSync, readSync, renameSync, statSync, truncateSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/** How `tickfleet up` caps the logs of its roles (docs/cli.md#up). */
export const ROLE_LOG_DEFAULTS = {
  /** A role's current log is rotated once it grows past this. */
  maxBytes: 10 * 1024 * 1024,
  /** Older files kept per role (`<role>.log.1` newest … `<role>.log.3`); the previous runs' logs count among them. */
  keep: 3,
  /** How often `up` looks at the sizes. */
  checkEveryMs: 2000,
} as const;

export interface RoleLogsOptions {
  /** @defaultValue {@link ROLE_LOG_DEFAULTS.maxBytes} */
  maxBytes?: number;
  /** @defaultValue {@link ROLE_LOG_DEFAULTS.keep} */
  keep?: number;
  /** @defaultValue {@link ROLE_LOG_DEFAULTS.checkEveryMs} */
  checkEveryMs?: number;
}

/**
 * The log files of `tickfleet up`'s roles, `<dir>/<role>.log`, capped: each run starts new files
 * (the last run's become `<role>.log.1`, older ones shift up to `.log.<keep>`, beyond that deleted),
 * and a file that grows past `maxBytes` during a run is rotated the same way. The roles write their
 * files themselves (opened for appending), so a file is rotated by copying it to `.log.1` and
 * truncating it in place: the writer keeps its descriptor and goes on at the start of the emptied
 * file. A line written in the instant between the copy and the truncation can be lost.
 * Per role at most (keep + 1) × maxBytes, plus what is written between two checks.
 */
export class RoleLogs {
  readonly maxBytes: number;
  readonly keep: number;
  private readonly checkEveryMs: number;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly dir: string,
    options: RoleLogsOptions = {},
  ) {
    this.maxBytes = options.maxBytes ?? ROLE_LOG_DEFAULTS.maxBytes;
    this.keep = Math.max(1, options.keep ?? ROLE_LOG_DEFAULTS.keep);
    this.checkEveryMs = options.checkEveryMs ?? ROLE_LOG_DEFAULTS.checkEveryMs;
  }

  /** The current log file of `role`. */
  path(role: string): string {
    return join(this.dir, `${role}.log`);
  }

  /** A new run: every current log left in the directory becomes `.log.1` (older files shift). */
  startRun(): void {
    for (const name of readdirSync(this.dir)) {
      if (!name.endsWith('.log')) continue;
      const file = join(this.dir, name);
      this.shift(file);
      renameSync(file, `${file}.1`);
    }
  }

  /** Checks the sizes every `checkEveryMs` until {@link stop}. */
  start(): void {
    this.timer ??= setInterval(() => this.check(), this.checkEveryMs).unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Rotates every current log past `maxBytes`. */
  check(): void {
    for (const name of readdirSync(this.dir)) {
      if (!name.endsWith('.log')) continue;
      const file = join(this.dir, name);
      try {
        if (statSync(file).size > this.maxBytes) this.rotate(file);
      } catch (err) {
        // Removed meanwhile (by hand): nothing to rotate.
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    }
  }

  /** Copy-and-truncate: the copy catches up with what was appended while it ran, then the file is emptied. */
  private rotate(file: string): void {
    this.shift(file);
    const rotated = `${file}.1`;
    copyFileSync(file, rotated);
    let copied = statSync(rotated).size;
    const out = openSync(rotated, 'a');
    const input = openSync(file, 'r');
    try {
      const buf = Buffer.alloc(64 * 1024);
      for (;;) {
        const n = readSync(input, buf, 0, buf.length, copied);
        if (n === 0) break;
        writeSync(out, buf, 0, n);
        copied += n;
      }
    } finally {
      closeSync(input);
      closeSync(out);
    }
    truncateSync(file, 0);
  }

  /** Makes room for a new `.log.1`: `.log.<keep>` is deleted, each older file moves up one. */
  private shift(file: string): void {
    const oldest = `${file}.${this.keep}`;
    if (existsSync(oldest)) unlinkSync(oldest);
    for (let i = this.keep - 1; i >= 1; i--) {
      if (existsSync(`${file}.${i}`)) renameSync(`${file}.${i}`, `${file}.${i + 1}`);
    }
  }
}
