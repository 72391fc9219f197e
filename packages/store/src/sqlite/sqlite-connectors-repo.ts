import type { Database, Statement } from 'better-sqlite3';
import { type Clock, type Connector, type ConnectorInput, ConnectorStatus, NotFoundError, parseOrThrow } from '@tickfleet/core';
import type { ConnectorsRepo } from '../state-store.js';
import { normalizeConnector } from '../internal/inputs.js';
import { bit, toConnector, type ConnectorRow } from './rows.js';
import { prepareReturning } from './returning-statement.js';

const COLUMNS =
  'venue, status, base_url, policy, rl_limit, period_ms, headroom, max_inflight, freeze_ms, freeze_max_ms, freeze_reset_ms, pacing, aimd, book_cooldown, book_loop, created_at, updated_at';

export class SqliteConnectorsRepo implements ConnectorsRepo {
  private readonly upsertStmt: Statement;
  private readonly getStmt: Statement;
  private readonly listStmt: Statement;
  private readonly setStatusStmt: Statement;

  constructor(
    db: Database,
    private readonly clock: Clock,
  ) {
    // One statement: a second upsert of the same venue updates the one row; optional fields the
    // caller left out keep their stored values (`CASE WHEN :g_x`), budget state is never touched.
    this.upsertStmt = prepareReturning(
      db,
      `
      INSERT INTO connectors (${COLUMNS})
      VALUES (:venue, :status, :baseUrl, :policy, :limit, :periodMs, :headroom, :maxInflight, :freezeMs, :freezeMaxMs, :freezeResetMs, :pacing, :aimd, :bookCooldown, :bookLoop, :now, :now)
      ON CONFLICT (venue) DO UPDATE SET
        status       = CASE WHEN :g_status      THEN excluded.status       ELSE status       END,
        base_url     = excluded.base_url,
        policy       = CASE WHEN :g_policy      THEN excluded.policy       ELSE policy       END,
        rl_limit     = excluded.rl_limit,
        period_ms    = excluded.period_ms,
        headroom     = CASE WHEN :g_headroom    THEN excluded.headroom     ELSE headroom     END,
        max_inflight = CASE WHEN :g_maxInflight THEN excluded.max_inflight ELSE max_inflight END,
        freeze_ms    = CASE WHEN :g_freezeMs    THEN excluded.freeze_ms    ELSE freeze_ms    END,
        freeze_max_ms   = CASE WHEN :g_freezeMaxMs   THEN excluded.freeze_max_ms   ELSE freeze_max_ms   END,
        freeze_reset_ms = CASE WHEN :g_freezeResetMs THEN excluded.freeze_reset_ms ELSE freeze_reset_ms END,
        pacing          = CASE WHEN :g_pacing        THEN excluded.pacing          ELSE pacing          END,
        aimd         = CASE WHEN :g_aimd        THEN excluded.aimd         ELSE aimd         END,
        book_cooldown = CASE WHEN :g_bookCooldown THEN excluded.book_cooldown ELSE book_cooldown END,
        book_loop     = CASE WHEN :g_bookLoop     THEN excluded.book_loop     ELSE book_loop     END,
        updated_at   = excluded.updated_at
      RETURNING ${COLUMNS}`,
    );
    this.getStmt = db.prepare(`SELECT ${COLUMNS} FROM connectors WHERE venue = ?`);
    this.listStmt = db.prepare(`SELECT ${COLUMNS} FROM connectors ORDER BY venue`);
    this.setStatusStmt = prepareReturning(db, `UPDATE connectors SET status = ?, updated_at = ? WHERE venue = ? RETURNING ${COLUMNS}`);
  }

  async upsert(input: ConnectorInput): Promise<Connector> {
    const { connector: c, given } = normalizeConnector(input);
    const row = this.upsertStmt.get({
      venue: c.venue,
      status: c.status,
      baseUrl: c.baseUrl,
      policy: c.rateLimit.policy,
      limit: c.rateLimit.limit,
      periodMs: c.rateLimit.periodMs,
      headroom: c.rateLimit.headroom,
      maxInflight: c.maxInflight,
      freezeMs: c.freezeMs,
      freezeMaxMs: c.freezeMaxMs,
      freezeResetMs: c.freezeResetMs ?? null,
      pacing: c.pacing ?? null,
      aimd: JSON.stringify(c.aimd),
      bookCooldown: JSON.stringify(c.bookCooldown),
      bookLoop: c.bookLoop ? JSON.stringify(c.bookLoop) : null,
      now: this.clock.now(),
      g_status: bit(given.status),
      g_policy: bit(given.policy),
      g_headroom: bit(given.headroom),
      g_maxInflight: bit(given.maxInflight),
      g_freezeMs: bit(given.freezeMs),
      g_freezeMaxMs: bit(given.freezeMaxMs),
      g_freezeResetMs: bit(given.freezeResetMs),
      g_pacing: bit(given.pacing),
      g_aimd: bit(given.aimd),
      g_bookCooldown: bit(given.bookCooldown),
      g_bookLoop: bit(given.bookLoop),
    }) as ConnectorRow;
    return toConnector(row);
  }

  async get(venue: string): Promise<Connector | null> {
    const row = this.getStmt.get(venue) as ConnectorRow | undefined;
    return row ? toConnector(row) : null;
  }

  async list(): Promise<Connector[]> {
    return (this.listStmt.all() as ConnectorRow[]).map(toConnector);
  }

  async setStatus(venue: string, status: ConnectorStatus): Promise<Connector> {
    const valid = parseOrThrow(ConnectorStatus, status, 'status');
    const row = this.setStatusStmt.get(valid, this.clock.now(), venue) as ConnectorRow | undefined;
    if (!row) throw new NotFoundError('connector', venue);
    return toConnector(row);
  }
}
