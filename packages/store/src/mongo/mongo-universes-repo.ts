import { type Clock, NotFoundError, type Universe, universeKey } from '@tickfleet/core';
import type { UniversesRepo } from '../state-store.js';
import { validateUniverse } from '../internal/universe-inputs.js';
import { type MongoCollections, toUniverse } from './documents.js';

export class MongoUniversesRepo implements UniversesRepo {
  constructor(
    private readonly c: MongoCollections,
    private readonly clock: Clock,
  ) {}

  async set(venue: string, name: string, symbols: readonly string[]): Promise<Universe> {
    const u = validateUniverse(venue, name, symbols);
    const now = this.clock.now();
    const id = universeKey(u.venue, u.name);
    const doc = await this.c.universes.findOneAndUpdate(
      { _id: id },
      { $set: { venue: u.venue, name: u.name, symbols: u.symbols, updatedAt: now }, $setOnInsert: { createdAt: now } },
      { upsert: true, returnDocument: 'after' },
    );
    if (!doc) throw new NotFoundError('universe', id);
    return toUniverse(doc);
  }

  async get(venue: string, name: string): Promise<Universe | null> {
    const doc = await this.c.universes.findOne({ _id: universeKey(venue, name) });
    return doc ? toUniverse(doc) : null;
  }

  async list(venue?: string): Promise<Universe[]> {
    return (
      await this.c.universes
        .find(venue === undefined ? {} : { venue })
        .sort({ venue: 1, name: 1 })
        .toArray()
    ).map(toUniverse);
  }

  async remove(venue: string, name: string): Promise<boolean> {
    return (await this.c.universes.deleteOne({ _id: universeKey(venue, name) })).deletedCount > 0;
  }

  async members(venue: string, name: string): Promise<string[]> {
    const u = await this.get(venue, name);
    if (!u) throw new NotFoundError('universe', universeKey(venue, name));
    return u.symbols;
  }
}
