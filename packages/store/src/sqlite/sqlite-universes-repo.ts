import type { Database, Statement } from 'better-sqlite3';
import { type Clock, NotFoundError, type Universe, universeKey } from '@tickfleet/core';
import type { UniversesRepo } from '../state-store.js';
import { validateUniverse } from '../internal/universe-inputs.js';
import { prepareReturning } from './returning-statement.js';

interface UniverseRow {
  venue: string;
  name: string;
  symbols: string;
  created_at: number;
  updated_at: number;
}

function toUniverse(r: UniverseRow): Universe {
  return { venue: r.venue, name: r.name, symbols: JSON.parse(r.symbols) as string[], createdAt: r.created_at, updatedAt: r.updated_at };
}

export class SqliteUniversesRepo implements UniversesRepo {
  private readonly setStmt: Statement;
  private readonly getStmt: Statement;
  private readonly listStmt: Statement;
  private readonly listVenueStmt: Statement;
  private readonly removeStmt: Statement;

  constructor(
    db: Database,
    private readonly clock: Clock,
  ) {
    this.setStmt = prepareReturning(
      db,
      `
      INSERT INTO universes (venue, name, symbols, created_at, updated_at) VALUES (:venue, :name, :symbols, :now, :now)
      ON CONFLICT (venue, name) DO UPDATE SET symbols = excluded.symbols, updated_at = excluded.updated_at
      RETURNING *`,
    );
    this.getStmt = db.prepare('SELECT * FROM universes WHERE venue = ? AND name = ?');
    this.listStmt = db.prepare('SELECT * FROM universes ORDER BY venue, name');
    this.listVenueStmt = db.prepare('SELECT * FROM universes WHERE venue = ? ORDER BY name');
    this.removeStmt = db.prepare('DELETE FROM universes WHERE venue = ? AND name = ?');
  }

  async set(venue: string, name: string, symbols: readonly string[]): Promise<Universe> {
    const u = validateUniverse(venue, name, symbols);
    return toUniverse(this.setStmt.get({ venue: u.venue, name: u.name, symbols: JSON.stringify(u.symbols), now: this.clock.now() }) as UniverseRow);
  }

  async get(venue: string, name: string): Promise<Universe | null> {
    const row = this.getStmt.get(venue, name) as UniverseRow | undefined;
    return row ? toUniverse(row) : null;
  }

  async list(venue?: string): Promise<Universe[]> {
    const rows = (venue === undefined ? this.listStmt.all() : this.listVenueStmt.all(venue)) as UniverseRow[];
    return rows.map(toUniverse);
  }

  async remove(venue: string, name: string): Promise<boolean> {
    return this.removeStmt.run(venue, name).changes > 0;
  }

  async members(venue: string, name: string): Promise<string[]> {
    const u = await this.get(venue, name);
    if (!u) throw new NotFoundError('universe', universeKey(venue, name));
    return u.symbols;
  }
}
