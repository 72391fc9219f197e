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

interface StreamRow {
  name: string;
  venue: string;
  symbols: string;
  channels: string;
  book_depth: number | null;
  enabled: number;
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

/** Streams in SQLite: each change of a stream and the bump of the set's version are one write transaction. */
export class SqliteStreamsRepo implements StreamsRepo {
  private readonly upsertStmt: Statement;
  private readonly getStmt: Statement;
  private readonly listStmt: Statement;
  private readonly removeStmt: Statement;
  private readonly enableStmt: Statement;
  private readonly bumpStmt: Statement;
  private readonly versionStmt: Statement;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {
    this.upsertStmt = db.prepare(`
      INSERT INTO streams (name, venue, symbols, channels, book_depth, enabled, version, created_at, updated_at)
      VALUES (:name, :venue, :symbols, :channels, :bookDepth, :enabled, 1, :now, :now)
      ON CONFLICT (name) DO UPDATE SET venue = excluded.venue, symbols = excluded.symbols, channels = excluded.channels,
        book_depth = excluded.book_depth, enabled = excluded.enabled, version = version + 1, updated_at = excluded.updated_at
      RETURNING *`);
    this.getStmt = db.prepare('SELECT * FROM streams WHERE name = ?');
    this.listStmt = db.prepare(`
      SELECT * FROM streams WHERE (:venue IS NULL OR venue = :venue) AND (:enabled IS NULL OR enabled = :enabled) ORDER BY name`);
    this.removeStmt = db.prepare('DELETE FROM streams WHERE name = ?');
    this.enableStmt = db.prepare('UPDATE streams SET enabled = :enabled, version = version + 1, updated_at = :now WHERE name = :name RETURNING *');
    this.bumpStmt = db.prepare('UPDATE stream_set SET version = version + 1 WHERE id = 1');
    this.versionStmt = db.prepare('SELECT version FROM stream_set WHERE id = 1').pluck();
  }

  async upsert(input: StreamInput): Promise<StreamDefinition> {
    const spec = parseStreamInput(input);
    const tx = this.db.transaction((): StreamRow => {
      const current = this.getStmt.get(spec.name) as StreamRow | undefined;
      if (current) {
        const stored = toStream(current);
        if (sameStreamSpec(stored, spec) && (spec.enabled === undefined || spec.enabled === stored.enabled)) return current;
      }
      const enabled = spec.enabled ?? (current ? current.enabled === 1 : true);
      const row = this.upsertStmt.get({
        name: spec.name,
        venue: spec.venue,
        symbols: JSON.stringify(spec.symbols),
        channels: JSON.stringify(spec.channels),
        bookDepth: spec.bookDepth,
        enabled: enabled ? 1 : 0,
        now: this.clock.now(),
      }) as StreamRow;
      this.bumpStmt.run();
      return row;
    });
    return toStream(tx.immediate());
  }

  async get(name: string): Promise<StreamDefinition | null> {
    const row = this.getStmt.get(name) as StreamRow | undefined;
    return row ? toStream(row) : null;
  }

  async list(filter: StreamFilter = {}): Promise<StreamDefinition[]> {
    const enabled = filter.enabled === undefined ? null : filter.enabled ? 1 : 0;
    return (this.listStmt.all({ venue: filter.venue ?? null, enabled }) as StreamRow[]).map(toStream);
  }

  async remove(name: string): Promise<boolean> {
    const tx = this.db.transaction((): boolean => {
      if (this.removeStmt.run(name).changes === 0) return false;
      this.bumpStmt.run();
      return true;
    });
    return tx.immediate();
  }

  async setEnabled(name: string, enabled: boolean): Promise<StreamDefinition> {
    const tx = this.db.transaction((): StreamRow => {
      const current = this.getStmt.get(name) as StreamRow | undefined;
      if (!current) throw new NotFoundError('stream', name);
      if ((current.enabled === 1) === enabled) return current;
      const row = this.enableStmt.get({ name, enabled: enabled ? 1 : 0, now: this.clock.now() }) as StreamRow;
      this.bumpStmt.run();
      return row;
    });
    return toStream(tx.immediate());
  }

  async streamsVersion(): Promise<number> {
    return this.versionStmt.get() as number;
  }
}
