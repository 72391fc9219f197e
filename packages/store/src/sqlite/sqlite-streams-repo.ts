import type { Database, Statement } from 'better-sqlite3';
import {
  type Clock,
  NotFoundError,
  parseStreamInput,
  sameStreamSpec,
  type StreamChannel,
  type StreamDefinition,
  type StreamInput,
  type StreamVenue,
} from '@tickfleet/core';
import type { StreamFilter, StreamsRepo } from '../state-store.js';
import { prepareReturning } from './returning-statement.js';

interface StreamRow {
  name: string;
  venue: string;
  symbols: string;
  channels: string;
  book_depth: number | null;
  enabled: number;
  removed: number;
  version: number;
  created_at: number;
  updated_at: number;
}

function toStream(r: StreamRow): StreamDefinition {
  return {
    name: r.name,
    venue: r.venue as StreamVenue,
    symbols: JSON.parse(r.symbols) as string[],
    channels: JSON.parse(r.channels) as StreamChannel[],
    bookDepth: r.book_depth,
    enabled: r.enabled === 1,
    version: r.version,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

/**
 * Streams in SQLite, one row per name ever used. Every change adds 1 to one row's version in the
 * statement that makes it, and a removal only marks its row removed, so the set's version (the
 * sum of all versions) moves with every change, atomically, exactly as in the MongoDB adapter.
 */
export class SqliteStreamsRepo implements StreamsRepo {
  private readonly upsertStmt: Statement;
  private readonly rowStmt: Statement;
  private readonly listStmt: Statement;
  private readonly removeStmt: Statement;
  private readonly enableStmt: Statement;
  private readonly versionStmt: Statement;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {
    // A name used again after its removal is a new stream (new createdAt) whose version goes on
    // from the removed one's.
    this.upsertStmt = prepareReturning(
      db,
      `
      INSERT INTO streams (name, venue, symbols, channels, book_depth, enabled, removed, version, created_at, updated_at)
      VALUES (:name, :venue, :symbols, :channels, :bookDepth, :enabled, 0, 1, :now, :now)
      ON CONFLICT (name) DO UPDATE SET venue = excluded.venue, symbols = excluded.symbols, channels = excluded.channels,
        book_depth = excluded.book_depth, enabled = excluded.enabled, version = version + 1, updated_at = excluded.updated_at,
        created_at = CASE WHEN removed = 1 THEN excluded.created_at ELSE created_at END, removed = 0
      RETURNING *`,
    );
    this.rowStmt = db.prepare('SELECT * FROM streams WHERE name = ?');
    this.listStmt = db.prepare(`
      SELECT * FROM streams WHERE removed = 0 AND (:venue IS NULL OR venue = :venue) AND (:enabled IS NULL OR enabled = :enabled) ORDER BY name`);
    this.removeStmt = db.prepare(`UPDATE streams SET removed = 1, symbols = '[]', version = version + 1, updated_at = :now WHERE name = :name AND removed = 0`);
    this.enableStmt = db.prepare(
      'UPDATE streams SET enabled = :enabled, version = version + 1, updated_at = :now WHERE name = :name AND removed = 0 AND enabled <> :enabled',
    );
    this.versionStmt = db.prepare('SELECT COALESCE(SUM(version), 0) FROM streams').pluck();
  }

  async upsert(input: StreamInput): Promise<StreamDefinition> {
    const spec = parseStreamInput(input);
    const tx = this.db.transaction((): StreamRow => {
      const row = this.rowStmt.get(spec.name) as StreamRow | undefined;
      const current = row && row.removed === 0 ? row : undefined;
      if (current) {
        const stored = toStream(current);
        if (sameStreamSpec(stored, spec) && (spec.enabled === undefined || spec.enabled === stored.enabled)) return current;
      }
      const enabled = spec.enabled ?? (current ? current.enabled === 1 : true);
      return this.upsertStmt.get({
        name: spec.name,
        venue: spec.venue,
        symbols: JSON.stringify(spec.symbols),
        channels: JSON.stringify(spec.channels),
        bookDepth: spec.bookDepth,
        enabled: enabled ? 1 : 0,
        now: this.clock.now(),
      }) as StreamRow;
    });
    return toStream(tx.immediate());
  }

  async get(name: string): Promise<StreamDefinition | null> {
    const row = this.rowStmt.get(name) as StreamRow | undefined;
    return row && row.removed === 0 ? toStream(row) : null;
  }

  async list(filter: StreamFilter = {}): Promise<StreamDefinition[]> {
    const enabled = filter.enabled === undefined ? null : filter.enabled ? 1 : 0;
    return (this.listStmt.all({ venue: filter.venue ?? null, enabled }) as StreamRow[]).map(toStream);
  }

  async remove(name: string): Promise<boolean> {
    return this.removeStmt.run({ name, now: this.clock.now() }).changes > 0;
  }

  async setEnabled(name: string, enabled: boolean): Promise<StreamDefinition> {
    // Setting the current value changes nothing (no update); then the row as it is, or NotFound.
    this.enableStmt.run({ name, enabled: enabled ? 1 : 0, now: this.clock.now() });
    const stream = await this.get(name);
    if (!stream) throw new NotFoundError('stream', name);
    return stream;
  }

  async streamsVersion(): Promise<number> {
    return this.versionStmt.get() as number;
  }
}
