import type { Filter } from 'mongodb';
import { type Clock, NotFoundError, parseStreamInput, sameStreamSpec, StoreUnavailableError, type StreamDefinition, type StreamInput } from '@tickfleet/core';
import type { StreamFilter, StreamsRepo } from '../state-store.js';
import { type MongoCollections, type StreamDoc, toStream } from './documents.js';

const DUPLICATE_KEY = 11000;
/** Upsert attempts while other writers change the same stream between our read and our write. */
const MAX_ATTEMPTS = 10;
/** Live streams: removed ones stay as tombstones. */
const LIVE = { removed: { $ne: true } } as const;

/**
 * Streams in MongoDB, one document per name ever used. Every change adds 1 to one document's
 * version in the single-document write that makes it (a replace is a compare-and-set on the
 * version read), and a removal only marks its document removed, so the set's version (the sum of
 * all versions) moves with every change without a transaction over two documents, which a
 * standalone server does not offer.
 */
export class MongoStreamsRepo implements StreamsRepo {
  constructor(
    private readonly c: MongoCollections,
    private readonly clock: Clock,
  ) {}

  async upsert(input: StreamInput): Promise<StreamDefinition> {
    const spec = parseStreamInput(input);
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const doc = await this.c.streams.findOne({ _id: spec.name });
      const now = this.clock.now();
      const fields = { venue: spec.venue, symbols: spec.symbols, channels: spec.channels, bookDepth: spec.bookDepth, updatedAt: now };
      if (!doc) {
        const created: StreamDoc = { _id: spec.name, name: spec.name, ...fields, enabled: spec.enabled ?? true, removed: false, version: 1, createdAt: now };
        try {
          await this.c.streams.insertOne(created);
        } catch (err) {
          // Another writer created it between our read and our insert: compare against theirs.
          if ((err as { code?: unknown }).code === DUPLICATE_KEY) continue;
          throw err;
        }
        return toStream(created);
      }
      const live = doc.removed !== true;
      const stored = toStream(doc);
      if (live && sameStreamSpec(stored, spec) && (spec.enabled === undefined || spec.enabled === stored.enabled)) return stored;
      // A name used again after its removal is a new stream (new createdAt) whose version goes on from the removed one's.
      const updated = await this.c.streams.findOneAndUpdate(
        { _id: spec.name, version: doc.version },
        {
          $set: {
            ...fields,
            enabled: spec.enabled ?? (live ? stored.enabled : true),
            removed: false,
            version: doc.version + 1,
            ...(live ? {} : { createdAt: now }),
          },
        },
        { returnDocument: 'after' },
      );
      if (updated) return toStream(updated);
    }
    throw new StoreUnavailableError(`stream ${JSON.stringify(spec.name)} was changed by other writers during ${MAX_ATTEMPTS} attempts to update it; try again`);
  }

  async get(name: string): Promise<StreamDefinition | null> {
    const doc = await this.c.streams.findOne({ _id: name, ...LIVE });
    return doc ? toStream(doc) : null;
  }

  async list(filter: StreamFilter = {}): Promise<StreamDefinition[]> {
    const q: Filter<StreamDoc> = { ...LIVE };
    // A venue without streams matches nothing, as in the SQLite adapter.
    if (filter.venue !== undefined) q.venue = filter.venue as StreamDoc['venue'];
    if (filter.enabled !== undefined) q.enabled = filter.enabled;
    return (await this.c.streams.find(q).sort({ _id: 1 }).toArray()).map(toStream);
  }

  async remove(name: string): Promise<boolean> {
    const res = await this.c.streams.updateOne(
      { _id: name, ...LIVE },
      { $set: { removed: true, symbols: [], updatedAt: this.clock.now() }, $inc: { version: 1 } },
    );
    return res.modifiedCount > 0;
  }

  async setEnabled(name: string, enabled: boolean): Promise<StreamDefinition> {
    const doc = await this.c.streams.findOneAndUpdate(
      { _id: name, enabled: !enabled, ...LIVE },
      { $set: { enabled, updatedAt: this.clock.now() }, $inc: { version: 1 } },
      { returnDocument: 'after' },
    );
    if (doc) return toStream(doc);
    // No change: either it does not exist, or it already has that value.
    const current = await this.get(name);
    if (!current) throw new NotFoundError('stream', name);
    return current;
  }

  async streamsVersion(): Promise<number> {
    const docs = await this.c.streams.find({}, { projection: { version: 1 } }).toArray();
    return docs.reduce((sum, d) => sum + d.version, 0);
  }
}
