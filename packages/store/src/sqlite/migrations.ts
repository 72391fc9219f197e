import type { Database } from 'better-sqlite3';

/**
 * Schema versions, applied in order and recorded in `PRAGMA user_version`. Append only: a released
 * migration never changes, a new version adds a new entry.
 */
const MIGRATIONS: readonly string[] = [
  // v1
  `
  CREATE TABLE connectors (
    venue          TEXT PRIMARY KEY,
    status         TEXT NOT NULL,
    base_url       TEXT NOT NULL,
    policy         TEXT NOT NULL,
    rl_limit       INTEGER NOT NULL,
    period_ms      INTEGER NOT NULL,
    headroom       REAL NOT NULL,
    max_inflight   INTEGER NOT NULL,
    freeze_ms      INTEGER NOT NULL,
    aimd           TEXT NOT NULL,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    -- Budget state lives on the connector row so acquire is one UPDATE of one row that also
    -- sees the policy and status it must obey. Only acquire/observe write these columns.
    b_window_start INTEGER,
    b_used         INTEGER NOT NULL DEFAULT 0,
    b_tat          REAL,
    b_at           INTEGER NOT NULL DEFAULT 0,
    b_ok           INTEGER NOT NULL DEFAULT 0
  );
  CREATE TABLE jobs (
    id              TEXT PRIMARY KEY,
    venue           TEXT NOT NULL,
    type            TEXT NOT NULL,
    symbol          TEXT NOT NULL,
    timeframe       TEXT,
    enabled         INTEGER NOT NULL,
    priority        INTEGER NOT NULL,
    next_run_at     INTEGER NOT NULL,
    locked_until    INTEGER,
    since           INTEGER,
    cursor          INTEGER,
    runs            INTEGER NOT NULL DEFAULT 0,
    failures        INTEGER NOT NULL DEFAULT 0,
    last_run_at     INTEGER,
    last_success_at INTEGER,
    last_error_at   INTEGER,
    last_error      TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
  );
  CREATE INDEX jobs_due ON jobs (enabled, next_run_at);
  CREATE INDEX jobs_venue ON jobs (venue);
  CREATE TABLE backfills (
    id          TEXT PRIMARY KEY,
    job_id      TEXT NOT NULL,
    from_ms     INTEGER NOT NULL,
    to_ms       INTEGER NOT NULL,
    units_total INTEGER NOT NULL,
    units_done  INTEGER NOT NULL DEFAULT 0,
    status      TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
  );
  CREATE INDEX backfills_job ON backfills (job_id);
  CREATE TABLE gaps (
    job_id      TEXT NOT NULL,
    from_ms     INTEGER NOT NULL,
    to_ms       INTEGER NOT NULL,
    kind        TEXT NOT NULL,
    detected_at INTEGER NOT NULL,
    filled_at   INTEGER,
    attempts    INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (job_id, from_ms, to_ms)
  );
  `,
  // Backfill progress per chunk (a unit run twice counts once), failures with their reasons.
  `
  CREATE TABLE backfill_chunks (
    backfill_id TEXT NOT NULL,
    from_ms     INTEGER NOT NULL,
    to_ms       INTEGER NOT NULL,
    idx         INTEGER NOT NULL,
    status      TEXT NOT NULL,
    error       TEXT,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (backfill_id, from_ms)
  ) WITHOUT ROWID;
  CREATE INDEX backfill_chunks_status ON backfill_chunks (status, backfill_id, from_ms);
  ALTER TABLE backfills ADD COLUMN units_failed INTEGER NOT NULL DEFAULT 0;
  `,
  // Freeze escalation after repeated 429s: its cap and the clean period that resets it (null: freeze_ms).
  `
  ALTER TABLE connectors ADD COLUMN freeze_max_ms INTEGER NOT NULL DEFAULT 900000;
  ALTER TABLE connectors ADD COLUMN freeze_reset_ms INTEGER;
  `,
  // Per-venue order-book cooldown settings (JSON; null: the defaults).
  `
  ALTER TABLE connectors ADD COLUMN book_cooldown TEXT;
  `,
  // Universes: named symbol lists per venue, members as a JSON array (read and written whole).
  `
  CREATE TABLE universes (
    venue      TEXT NOT NULL,
    name       TEXT NOT NULL,
    symbols    TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (venue, name)
  ) WITHOUT ROWID;
  `,
  // Members per cycle of a job over a universe (null: the default).
  `
  ALTER TABLE jobs ADD COLUMN per_cycle INTEGER;
  `,
  // Per-scope pacing of venues budgeted per market (Xetra): 'even' | 'burst'; null: even.
  `
  ALTER TABLE connectors ADD COLUMN pacing TEXT;
  `,
  // Stream definitions (symbols and channels as JSON arrays, read and written whole). A removed
  // stream stays as a tombstone (removed = 1) so the set's version, the sum of every row's
  // version, never goes back.
  `
  CREATE TABLE streams (
    name       TEXT PRIMARY KEY,
    venue      TEXT NOT NULL,
    symbols    TEXT NOT NULL,
    channels   TEXT NOT NULL,
    book_depth INTEGER,
    enabled    INTEGER NOT NULL,
    removed    INTEGER NOT NULL DEFAULT 0,
    version    INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  ) WITHOUT ROWID;
  `,
  // The last member stored of the day a sliced per-day universe job is collecting (null: none yet).
  `
  ALTER TABLE jobs ADD COLUMN member_cursor TEXT;
  `,
  // The unit lock of a job: the token of the unit that may move its cursor, and until when.
  `
  ALTER TABLE jobs ADD COLUMN unit_token TEXT;
  ALTER TABLE jobs ADD COLUMN unit_until INTEGER;
  `,
  // Who took a job's lease (the claiming scheduler's holder string; null: a claim that named none).
  `
  ALTER TABLE jobs ADD COLUMN lease_holder TEXT;
  `,
  // A sliding-window budget's slots (JSON [[index, weight], …], oldest first; null: none yet).
  `
  ALTER TABLE connectors ADD COLUMN b_slots TEXT;
  `,
  // A venue's book poll loop settings (JSON; null: books polled as units).
  `
  ALTER TABLE connectors ADD COLUMN book_loop TEXT;
  `,
];

export const SCHEMA_VERSION = MIGRATIONS.length;

/**
 * Brings the database to SCHEMA_VERSION. Each step runs in a BEGIN IMMEDIATE transaction that
 * re-reads user_version first, so processes opening the same new file at once apply each step
 * exactly once (the others wait on the write lock, then see the new version).
 */
export function migrate(db: Database): void {
  for (let target = 1; target <= MIGRATIONS.length; target++) {
    // Up-to-date files are the common case: checking without the write lock lets a process open
    // the store while another one holds a long write transaction.
    if ((db.pragma('user_version', { simple: true }) as number) >= target) continue;
    const step = db.transaction(() => {
      const current = db.pragma('user_version', { simple: true }) as number;
      if (current >= target) return;
      db.exec(MIGRATIONS[target - 1] ?? '');
      db.pragma(`user_version = ${target}`);
    });
    step.immediate();
  }
}
