import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { retryWhileBusySync, SQLITE_ATTEMPT_BUSY_MS, type Candle, type Envelope } from '@tickfleet/core';
import type { RetryOptions } from '../internal/sink-health.js';
import { RetryingSink } from '../internal/retrying-sink.js';
import { sleep } from '../internal/sleep.js';
import { SQLITE_SCHEMA } from '../internal/sqlite-schema.js';
import type { KeyedEnvelope } from '../records.js';
import type { DataReader, ErrorSample, Sink } from '../sink.js';
import { SqliteDataReader } from './sqlite-data-reader.js';
import { SINK_DEFAULTS } from '../sink-defaults.js';

/** The candles table's columns in the order `bindCandle` fills them. */
const CANDLE_COLUMN_NAMES = [
  'venue',
  'symbol',
  'timeframe',
  'open_time',
  'open',
  'high',
  'low',
  'close',
  'volume',
  'trades',
  'server_time_ms',
  'received_at_ms',
] as const;
const CANDLE_COLUMNS = CANDLE_COLUMN_NAMES.length;
/** Candle rows per multi-row INSERT (600 bound values, far below SQLite's limit). */
const CANDLE_ROWS_PER_INSERT = 50;

export interface SqliteSinkOptions extends RetryOptions {
  /**
   * How long a batch waits for another process's write lock before its attempt fails (then the
   * sink's retries and state machine take over). The wait is asynchronous: see {@link SQLITE_ATTEMPT_BUSY_MS}.
   * @defaultValue {@link SINK_DEFAULTS.sqliteBusyTimeoutMs}
   */
  busyTimeoutMs?: number;
  /**
   * `NORMAL` under WAL survives process crashes (SIGKILL) but may lose the last commits on power
   * loss; `FULL` survives both at roughly 2x the commit cost. @defaultValue {@link SINK_DEFAULTS.sqliteSynchronous}
   */
  synchronous?: 'NORMAL' | 'FULL';
}

/**
 * SQLite sink: one `BEGIN IMMEDIATE` transaction per batch, `INSERT … ON CONFLICT DO NOTHING`,
 * WAL so several local processes write the same file (each waiting up to `busyTimeoutMs`).
 */
export class SqliteSink extends RetryingSink implements Sink {
  readonly adapter = 'sqlite' as const;
  readonly reader: DataReader;
  private readonly db: Database.Database;
  private readonly insertBatch: (rows: KeyedEnvelope[]) => number;
  private readonly insertErrors: (samples: readonly ErrorSample[]) => void;
  private readonly busyTimeoutMs: number;

  constructor(
    readonly path: string,
    options: SqliteSinkOptions = {},
  ) {
    super('sqlite', options);
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    this.busyTimeoutMs = options.busyTimeoutMs ?? SINK_DEFAULTS.sqliteBusyTimeoutMs;
    // Opening and the schema below wait for a lock the blocking way (once, at start).
    this.db = new Database(path, { timeout: Math.max(SQLITE_ATTEMPT_BUSY_MS, this.busyTimeoutMs) });
    const db = this.db;
    retryWhileBusySync(() => db.pragma('journal_mode = WAL'), Math.max(SQLITE_ATTEMPT_BUSY_MS, this.busyTimeoutMs));
    this.db.pragma(`synchronous = ${options.synchronous ?? SINK_DEFAULTS.sqliteSynchronous}`);
    // No memory-mapped reads, for the reason given where the SQLite state store opens its file.
    this.db.exec(SQLITE_SCHEMA);
    this.db.pragma(`busy_timeout = ${SQLITE_ATTEMPT_BUSY_MS}`);
    this.reader = new SqliteDataReader(this.db);

    const envStmt = this.db.prepare(
      `INSERT INTO envelopes (key, venue, channel, symbol, message_id, sequence, server_time_ms, received_at_ms, payload)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
    );
    const candleInsert = (rows: number): Database.Statement =>
      this.db.prepare(
        `INSERT INTO candles (${CANDLE_COLUMN_NAMES.join(', ')})
         VALUES ${Array.from({ length: rows }, () => `(${Array.from(CANDLE_COLUMN_NAMES, () => '?').join(', ')})`).join(', ')} ON CONFLICT DO NOTHING`,
      );
    // Candles go CANDLE_ROWS_PER_INSERT rows to a statement (about a tenth less CPU per page than a
    // bind-step-reset per row: scripts/bench/sinks.ts); the rest of a batch goes a row at a time.
    const candleStmt = candleInsert(1);
    const candlesStmt = candleInsert(CANDLE_ROWS_PER_INSERT);
    const params: unknown[] = new Array(CANDLE_ROWS_PER_INSERT * CANDLE_COLUMNS);
    const bindCandle = (to: unknown[], at: number, e: Envelope): void => {
      const c = e.payload as Candle;
      to[at] = c.venue;
      to[at + 1] = c.symbol;
      to[at + 2] = c.timeframe;
      to[at + 3] = c.openTime;
      to[at + 4] = c.open;
      to[at + 5] = c.high;
      to[at + 6] = c.low;
      to[at + 7] = c.close;
      to[at + 8] = c.volume;
      to[at + 9] = c.trades ?? null;
      to[at + 10] = e.serverTimeMs ?? null;
      to[at + 11] = e.receivedAtMs;
    };
    const one: unknown[] = new Array(CANDLE_COLUMNS);
    const tx = this.db.transaction((rows: KeyedEnvelope[]): number => {
      let inserted = 0;
      const candles: Envelope[] = [];
      for (const { key, envelope: e } of rows) {
        if (e.channel === 'candles') {
          candles.push(e);
          continue;
        }
        inserted += envStmt.run(
          key,
          e.venue,
          e.channel,
          e.symbol,
          e.messageId ?? null,
          e.sequence ?? null,
          e.serverTimeMs ?? null,
          e.receivedAtMs,
          JSON.stringify(e.payload),
        ).changes;
      }
      let i = 0;
      for (; i + CANDLE_ROWS_PER_INSERT <= candles.length; i += CANDLE_ROWS_PER_INSERT) {
        for (let j = 0; j < CANDLE_ROWS_PER_INSERT; j++) bindCandle(params, j * CANDLE_COLUMNS, candles[i + j]!);
        inserted += candlesStmt.run(params).changes;
      }
      for (; i < candles.length; i++) {
        bindCandle(one, 0, candles[i]!);
        inserted += candleStmt.run(one).changes;
      }
      return inserted;
    });
    // IMMEDIATE takes the write lock up front, so a busy database fails fast at BEGIN instead of mid-batch.
    this.insertBatch = (rows) => tx.immediate(rows);
    const errStmt = this.db.prepare('INSERT INTO ingest_errors (at_ms, venue, channel, field, message, sample) VALUES (?, ?, ?, ?, ?, ?)');
    this.insertErrors = this.db.transaction((samples: readonly ErrorSample[]) => {
      for (const s of samples) errStmt.run(s.atMs, s.venue, s.channel, s.field, s.message, s.sample);
    });
  }

  protected async storeBatch(valid: KeyedEnvelope[]): Promise<number> {
    return this.whenUnlocked(() => this.insertBatch(valid));
  }

  async writeErrors(samples: readonly ErrorSample[]): Promise<void> {
    if (samples.length > 0) await this.whenUnlocked(() => this.insertErrors(samples));
  }

  /**
   * Runs one transaction, trying again after a short asynchronous pause (1 ms, doubling to 16 ms,
   * jittered) while another connection holds the write lock, for up to `busyTimeoutMs`; then the
   * busy error goes to the caller. A failed try was rolled back whole, so a retry applies nothing twice.
   */
  private async whenUnlocked<T>(tx: () => T): Promise<T> {
    const started = performance.now();
    for (let attempt = 0; ; attempt++) {
      try {
        return tx();
      } catch (err) {
        const code = (err as { code?: unknown }).code;
        if (typeof code !== 'string' || !code.startsWith('SQLITE_BUSY') || performance.now() - started >= this.busyTimeoutMs) throw err;
        await sleep(2 ** Math.min(attempt, 4) * (0.5 + Math.random() / 2));
      }
    }
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}
