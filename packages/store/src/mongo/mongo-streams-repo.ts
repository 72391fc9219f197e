import type { Filter } from 'mongodb';
import { type Clock, NotFoundError, parseStreamInput, sameStreamSpec, StoreUnavailableError, type StreamDefinition, type StreamInput } from '@tickfleet/core';
import type { StreamFilter, StreamsRepo } from '../state-store.js';
import { type MongoCollections, type StreamDoc, toStream } from './documents.js';

const DUPLICATE_KEY = 11000;
/** `_id` of the document holding the set's version. */
const SET_ID = 'streams';
/** Upsert attempts while other writers change the same stream between our read and our write. */
const MAX_ATTEMPTS = 10;

/**
 * Streams in MongoDB. A replace is a compare-and-set on the stream's `version` (read, compare,
 * write where the version is still the one read), so concurrent writers never lose a change
 * silently. The set's version lives in its own document and is bumped right after each change:
 * MongoDB offers no transaction over both documents on a standalone server, so a writer killed
 * between the two leaves that one change unannounced until the next bump.
 */
export class MongoStreamsRepo implements StreamsRepo {
  constructor(
    private readonly c: MongoCollections,
    private readonly clock: Clock,
  ) {}

  async upsert(input: StreamInput): Promise<StreamDefinition> {
    const spec = parseStreamInput(input);
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const current = await this.c.streams.findOne({ _id: spec.name });
      const now = this.clock.now();
      const fields = { venue: spec.venue, symbols: spec.symbols, channels: spec.channels, bookDepth: spec.bookDepth, updatedAt: now };
      if (!current) {
        const doc: StreamDoc = { _id: spec.name, name: spec.name, ...fields, enabled: spec.enabled ?? true, version: 1, createdAt: now };
        try {
          await this.c.streams.insertOne(doc);
        } catch (err) {
          // Another writer created it between our read and our insert: compare against theirs.
          if ((err as { code?: unknown }).code === DUPLICATE_KEY) continue;
          throw err;
        }
        await this.bump();
        return toStream(doc);
      }
      const stored = toStream(current);
      if (sameStreamSpec(stored, spec) && (spec.enabled === undefined || spec.enabled === stored.enabled)) return stored;
      const doc = await this.c.streams.findOneAndUpdate(
        { _id: spec.name, version: stored.version },
        { $set: { ...fields, enabled: spec.enabled ?? stored.enabled, version: stored.version + 1 } },
        { returnDocument: 'after' },
      );
      if (!doc) continue;
      await this.bump();
      return toStream(doc);
    }
    throw new StoreUnavailableError(`stream ${JSON.stringify(spec.name)} was changed by other writers during ${MAX_ATTEMPTS} attempts to update it; try again`);
  }

  async get(name: string): Promise<StreamDefinition | null> {
    const doc = await this.c.streams.findOne({ _id: name });
    return doc ? toStream(doc) : null;
  }

  async list(filter: StreamFilter = {}): Promise<StreamDefinition[]> {
    const q: Filter<StreamDoc> = {};
    // A venue without streams matches nothing, as in the SQLite adapter.
    if (filter.venue !== undefined) q.venue = filter.venue as StreamDoc['venue'];
    if (filter.enabled !== undefined) q.enabled = filter.enabled;
    return (await this.c.streams.find(q).sort({ _id: 1 }).toArray()).map(toStream);
  }

  async remove(name: string): Promise<boolean> {
    if ((await this.c.streams.deleteOne({ _id: name })).deletedCount === 0) return false;
    await this.bump();
    return true;
  }

  async setEnabled(name: string, enabled: boolean): Promise<StreamDefinition> {
    const doc = await this.c.streams.findOneAndUpdate(
      { _id: name, enabled: !enabled },
      { $set: { enabled, updatedAt: this.clock.now() }, $inc: { version: 1 } },
      { returnDocument: 'after' },
    );
    if (doc) {
      await this.bump();
      return toStream(doc);
    }
    // No change: either it does not exist, or it already has that value.
    const current = await this.get(name);
    if (!current) throw new NotFoundError('stream', name);
    return current;
  }

  async streamsVersion(): Promise<number> {
    return (await this.c.streamSet.findOne({ _id: SET_ID }))?.version ?? 0;
  }

  private async bump(): Promise<void> {
    await this.c.streamSet.updateOne({ _id: SET_ID }, { $inc: { version: 1 } }, { upsert: true });
  }
}
