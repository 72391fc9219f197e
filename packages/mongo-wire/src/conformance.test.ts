/**
 * Conformance suite: MongoDB's documented behaviour, through the official driver. It runs
 * unchanged against a real MongoDB when MONGO_URL is set (e.g. mongodb://localhost:27017)
 * and otherwise against an in-process wire server, so any assertion here that passes on the
 * wire server must also pass on mongod. One database per test.
 */
import { randomUUID } from 'node:crypto';
import { type Db, type Document, MongoBulkWriteError, MongoClient, MongoServerError, ObjectId } from 'mongodb';
import { fixedWindowAcquire } from '../test/fixtures/budget-pipeline.js';
import { startMongoWire, type MongoWireHandle } from './index.js';

let wire: MongoWireHandle | undefined;
let baseUrl: string;
let client: MongoClient;
let db: Db;
/** Documents whose `_id` may be any BSON value, as in these tests. */
interface AnyDoc extends Document {
  _id?: string | number | ObjectId;
}
const coll = (name: string) => db.collection<AnyDoc>(name);
const backend = process.env.MONGO_URL ? 'real MongoDB' : 'mongo-wire';

function urlFor(dbName: string): string {
  const url = new URL(baseUrl);
  url.pathname = `/${dbName}`;
  return url.toString();
}

beforeAll(async () => {
  if (process.env.MONGO_URL) {
    baseUrl = process.env.MONGO_URL;
  } else {
    wire = await startMongoWire();
    baseUrl = wire.url;
  }
  client = new MongoClient(baseUrl);
  await client.connect();
});

afterAll(async () => {
  await client?.close();
  await wire?.stop();
});

beforeEach(() => {
  db = client.db(`conf_${randomUUID().replace(/-/g, '').slice(0, 16)}`);
});

afterEach(async () => {
  await db.dropDatabase();
});

async function serverError(promise: Promise<unknown>): Promise<MongoServerError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof MongoServerError) return err;
    throw err;
  }
  throw new Error('expected a server error');
}

describe(`conformance against ${backend}`, () => {
  describe('handshake', () => {
    it('answers hello, ping and buildInfo like a standalone 7.0 server', async () => {
      const hello = await db.admin().command({ hello: 1 });
      expect(hello.isWritablePrimary).toBe(true);
      expect(hello.maxWireVersion).toBeGreaterThanOrEqual(21);
      expect(hello.maxBsonObjectSize).toBe(16 * 1024 * 1024);
      expect(typeof hello.logicalSessionTimeoutMinutes).toBe('number');
      expect(await db.admin().command({ ping: 1 })).toMatchObject({ ok: 1 });
      const info = await db.admin().command({ buildInfo: 1 });
      expect(Number(String(info.version).split('.')[0])).toBeGreaterThanOrEqual(7);
    });
  });

  describe('insert', () => {
    it('assigns ObjectIds, stores _id first and returns documents by filter', async () => {
      const c = coll('items');
      const res = await c.insertMany([{ a: 1 }, { a: 2, nested: { b: 'x' } }]);
      expect(res.insertedCount).toBe(2);
      expect(res.insertedIds[0]).toBeInstanceOf(ObjectId);
      const docs = await c.find({}, { sort: { a: 1 } }).toArray();
      expect(docs.map((d) => d.a)).toEqual([1, 2]);
      expect(Object.keys(docs[1] as Document)[0]).toBe('_id');
      expect(await c.findOne({ 'nested.b': 'x' })).toMatchObject({ a: 2 });
      expect(await c.findOne({ _id: res.insertedIds[1] })).toMatchObject({ a: 2 });
    });

    it('stops an ordered insert at the first duplicate key', async () => {
      const c = coll('ordered');
      await c.insertOne({ _id: 2 } as Document);
      const err = (await c.insertMany([{ _id: 1 }, { _id: 2 }, { _id: 3 }] as Document[]).catch((e: unknown) => e)) as MongoBulkWriteError;
      expect(err).toBeInstanceOf(MongoBulkWriteError);
      expect(err.code).toBe(11000);
      expect(err.result.insertedCount).toBe(1);
      const writeErrors = err.writeErrors as unknown as { index: number; code: number }[];
      expect(writeErrors).toHaveLength(1);
      expect(writeErrors[0]).toMatchObject({ index: 1, code: 11000 });
      expect((await c.find().toArray()).map((d) => d._id)).toEqual([2, 1]);
    });

    it('continues an unordered insert past duplicates and reports each', async () => {
      const c = coll('unordered');
      await c.createIndex({ venue: 1, t: 1 }, { unique: true });
      await c.insertOne({ venue: 'x', t: 1 });
      const docs = [
        { venue: 'x', t: 1 },
        { venue: 'x', t: 2 },
        { venue: 'x', t: 2 },
        { venue: 'y', t: 1 },
      ];
      const err = (await c.insertMany(docs, { ordered: false }).catch((e: unknown) => e)) as MongoBulkWriteError;
      expect(err).toBeInstanceOf(MongoBulkWriteError);
      expect(err.result.insertedCount).toBe(2);
      const writeErrors = err.writeErrors as unknown as { index: number; code: number; err: { keyPattern?: Document; keyValue?: Document } }[];
      expect(writeErrors.map((e) => e.index)).toEqual([0, 2]);
      expect(writeErrors.every((e) => e.code === 11000)).toBe(true);
      expect(await c.countDocuments()).toBe(3);
    });

    it('reports keyPattern and keyValue on a duplicate key', async () => {
      const c = coll('dups');
      await c.createIndex({ sym: 1 }, { unique: true, name: 'sym_unique' });
      await c.insertOne({ sym: 'BTC' });
      const err = await serverError(c.insertOne({ sym: 'BTC' }));
      expect(err.code).toBe(11000);
      expect(err.errmsg).toContain('E11000 duplicate key error');
      expect(err.errmsg).toContain('sym_unique');
      expect(err.keyPattern).toEqual({ sym: 1 });
      expect(err.keyValue).toEqual({ sym: 'BTC' });
    });

    it('treats a missing field as null in a unique index unless sparse or partial', async () => {
      const plain = coll('plain');
      await plain.createIndex({ k: 1 }, { unique: true });
      await plain.insertOne({ a: 1 });
      expect((await serverError(plain.insertOne({ a: 2 }))).code).toBe(11000);
      const sparse = coll('sparse');
      await sparse.createIndex({ k: 1 }, { unique: true, sparse: true });
      await sparse.insertMany([{ a: 1 }, { a: 2 }, { k: 1 }]);
      expect((await serverError(sparse.insertOne({ k: 1 }))).code).toBe(11000);
      const partial = coll('partial');
      await partial.createIndex({ k: 1 }, { unique: true, partialFilterExpression: { live: true } });
      await partial.insertMany([
        { k: 1, live: false },
        { k: 1, live: true },
      ]);
      expect((await serverError(partial.insertOne({ k: 1, live: true }))).code).toBe(11000);
    });

    it('refuses a unique index over existing duplicates and enforces it on updates and upserts', async () => {
      const c = coll('later');
      await c.insertMany([{ k: 1 }, { k: 1 }]);
      expect((await serverError(c.createIndex({ k: 1 }, { unique: true }))).code).toBe(11000);
      await c.deleteOne({ k: 1 });
      await c.createIndex({ k: 1 }, { unique: true });
      await c.insertOne({ k: 2 });
      expect((await serverError(c.updateOne({ k: 2 }, { $set: { k: 1 } }))).code).toBe(11000);
      expect((await serverError(c.updateOne({ nothing: true }, { $set: { k: 2 } }, { upsert: true }))).code).toBe(11000);
      expect((await serverError(c.findOneAndUpdate({ k: 2 }, { $set: { k: 1 } }))).code).toBe(11000);
      expect((await c.find({}, { sort: { k: 1 } }).toArray()).map((d) => d.k)).toEqual([1, 2]);
    });
  });

  describe('find', () => {
    beforeEach(async () => {
      await coll('c').insertMany(Array.from({ length: 25 }, (_, i) => ({ i, group: i % 3, tag: i % 2 === 0 ? 'even' : 'odd', arr: [i, i + 100] })));
    });

    it('filters with query operators', async () => {
      const c = coll('c');
      expect(await c.countDocuments({ i: { $gte: 10, $lt: 15 } })).toBe(5);
      expect(await c.countDocuments({ $or: [{ i: 1 }, { i: { $in: [2, 3] } }] })).toBe(3);
      expect(await c.countDocuments({ missing: { $exists: false }, tag: 'odd' })).toBe(12);
      expect(await c.countDocuments({ arr: 105 })).toBe(1);
      expect(await c.countDocuments({ $expr: { $gt: ['$i', '$group'] } })).toBe(22);
    });

    it('sorts by compound keys, skips and limits', async () => {
      const docs = await coll('c')
        .find({}, { sort: { group: 1, i: -1 }, skip: 2, limit: 4 })
        .toArray();
      expect(docs.map((d) => [d.group, d.i])).toEqual([
        [0, 18],
        [0, 15],
        [0, 12],
        [0, 9],
      ]);
    });

    it('orders mixed types by BSON comparison order', async () => {
      const c = coll('mixed');
      const when = new Date(0);
      const oid = new ObjectId();
      await c.insertMany([{ v: 'str' }, { v: when }, { v: 2 }, { v: null }, { v: true }, { v: { x: 1 } }, { v: oid }, {}]);
      const docs = await c.find({}, { sort: { v: 1 }, projection: { _id: 0 } }).toArray();
      expect(docs.map((d) => d.v)).toEqual([null, undefined, 2, 'str', { x: 1 }, oid, true, when]);
    });

    it('projects fields in and out', async () => {
      const c = coll('c');
      const included = await c.findOne({ i: 3 }, { projection: { tag: 1 } });
      expect(Object.keys(included as Document).sort()).toEqual(['_id', 'tag']);
      const excluded = await c.findOne({ i: 3 }, { projection: { _id: 0, arr: 0 } });
      expect(excluded).toEqual({ i: 3, group: 0, tag: 'odd' });
    });

    it('returns large results across getMore batches', async () => {
      const commands: string[] = [];
      const monitored = new MongoClient(urlFor(db.databaseName), { monitorCommands: true });
      monitored.on('commandStarted', (e) => commands.push(e.commandName));
      try {
        const docs = await monitored
          .db()
          .collection('c')
          .find({}, { batchSize: 4, sort: { i: 1 } })
          .toArray();
        expect(docs.map((d) => d.i)).toEqual(Array.from({ length: 25 }, (_, i) => i));
        expect(commands.filter((c) => c === 'getMore')).toHaveLength(6);
        const cursor = monitored.db().collection('c').find({}, { batchSize: 2 });
        await cursor.next();
        await cursor.close();
        expect(commands).toContain('killCursors');
      } finally {
        await monitored.close();
      }
    });

    it('reports an unknown cursor id', async () => {
      const err = await serverError(db.command({ getMore: 123456789012, collection: 'c' }));
      expect(err.code).toBe(43);
      expect(err.codeName).toBe('CursorNotFound');
    });
  });

  describe('update', () => {
    it('applies update operators', async () => {
      const c = coll('u');
      await c.insertOne({ _id: 1, n: 5, hi: 10, lo: 10, gone: true, list: [1] } as Document);
      const res = await c.updateOne({ _id: 1 }, {
        $set: { 'a.b': 'x' },
        $inc: { n: 2 },
        $max: { hi: 20 },
        $min: { lo: 3 },
        $unset: { gone: '' },
        $push: { list: 2 },
        $setOnInsert: { never: 1 },
      } as Document);
      expect(res).toMatchObject({ matchedCount: 1, modifiedCount: 1 });
      expect(await c.findOne({ _id: 1 })).toEqual({ _id: 1, n: 7, hi: 20, lo: 3, list: [1, 2], a: { b: 'x' } });
      const noop = await c.updateOne({ _id: 1 }, { $set: { n: 7 }, $max: { hi: 1 } });
      expect(noop).toMatchObject({ matchedCount: 1, modifiedCount: 0 });
    });

    it('updates many and reports matched and modified counts', async () => {
      const c = coll('many');
      await c.insertMany([
        { g: 1, v: 0 },
        { g: 1, v: 1 },
        { g: 2, v: 0 },
      ]);
      const res = await c.updateMany({ g: 1 }, { $set: { v: 1 } });
      expect(res).toMatchObject({ matchedCount: 2, modifiedCount: 1, upsertedCount: 0 });
    });

    it('upserts from the filter equalities with $setOnInsert', async () => {
      const c = coll('ups');
      const first = await c.updateOne({ venue: 'binance', 'key.sym': 'BTC' }, { $setOnInsert: { created: 1 }, $inc: { hits: 1 } }, { upsert: true });
      expect(first.upsertedCount).toBe(1);
      expect(first.upsertedId).toBeInstanceOf(ObjectId);
      const second = await c.updateOne({ venue: 'binance', 'key.sym': 'BTC' }, { $setOnInsert: { created: 2 }, $inc: { hits: 1 } }, { upsert: true });
      expect(second).toMatchObject({ matchedCount: 1, modifiedCount: 1, upsertedCount: 0 });
      const doc = await c.findOne({}, { projection: { _id: 0 } });
      expect(doc).toEqual({ venue: 'binance', key: { sym: 'BTC' }, created: 1, hits: 2 });
      const byId = await c.updateOne({ _id: 'fixed' } as Document, { $set: { v: 1 } }, { upsert: true });
      expect(byId.upsertedId).toBe('fixed');
    });

    it('refuses to modify _id', async () => {
      const c = coll('imm');
      await c.insertOne({ _id: 1 } as Document);
      const err = await serverError(c.updateOne({ _id: 1 }, { $set: { _id: 2 } }));
      expect(err.code).toBe(66);
    });

    it('runs update pipelines with one $$NOW per command and expression operators', async () => {
      const c = coll('pipe');
      await c.insertMany(Array.from({ length: 20 }, (_, i) => ({ i, x: i * 10 })));
      const before = Date.now();
      await c.updateMany({}, [
        {
          $set: {
            at: '$$NOW',
            ms: { $toLong: '$$NOW' },
            bucket: { $mod: ['$i', 3] },
            half: { $floor: { $divide: ['$x', 20] } },
            capped: { $min: [{ $max: ['$x', 50] }, 150] },
            calc: { $subtract: [{ $multiply: [{ $add: ['$i', 1] }, 2] }, 1] },
            label: { $cond: [{ $gte: ['$i', 10] }, 'big', 'small'] },
            dflt: { $ifNull: ['$absent', 'none'] },
          },
        },
        { $unset: 'x' },
      ]);
      const after = Date.now();
      const docs = await c.find({}, { sort: { i: 1 } }).toArray();
      const stamps = new Set(docs.map((d) => (d.at as Date).getTime()));
      expect(stamps.size).toBe(1);
      const [stamp] = [...stamps] as [number];
      // A real server's clock may differ slightly from the test's.
      expect(stamp).toBeGreaterThanOrEqual(before - 5_000);
      expect(stamp).toBeLessThanOrEqual(after + 5_000);
      expect(Number(docs[0]?.ms)).toBe(stamp);
      const d7 = docs[7] as Document;
      expect(d7).toMatchObject({ bucket: 1, half: 3, capped: 70, calc: 15, label: 'small', dflt: 'none' });
      expect(d7.x).toBeUndefined();
      expect(docs[19]).toMatchObject({ capped: 150, label: 'big' });
    });
  });

  describe('delete', () => {
    it('deletes one or many', async () => {
      const c = coll('d');
      await c.insertMany([{ g: 1 }, { g: 1 }, { g: 2 }]);
      expect((await c.deleteOne({ g: 1 })).deletedCount).toBe(1);
      expect((await c.deleteMany({})).deletedCount).toBe(2);
      expect((await c.deleteMany({ g: 3 })).deletedCount).toBe(0);
    });
  });

  describe('findAndModify', () => {
    beforeEach(async () => {
      await coll('jobs').insertMany([
        { _id: 'a', prio: 1, due: 3, state: 'idle' },
        { _id: 'b', prio: 5, due: 2, state: 'idle' },
        { _id: 'c', prio: 5, due: 1, state: 'idle' },
      ] as Document[]);
    });

    it('updates the first document by sort and returns before or after', async () => {
      const c = coll('jobs');
      const before = await c.findOneAndUpdate({ state: 'idle' }, { $set: { state: 'busy' } }, { sort: { prio: -1, due: 1 } });
      expect(before).toMatchObject({ _id: 'c', state: 'idle' });
      const after = await c.findOneAndUpdate(
        { state: 'idle' },
        { $set: { state: 'busy' } },
        { sort: { prio: -1, due: 1 }, returnDocument: 'after', projection: { state: 1 } },
      );
      expect(after).toEqual({ _id: 'b', state: 'busy' });
      const none = await c.findOneAndUpdate({ state: 'gone' }, { $set: { state: 'x' } });
      expect(none).toBeNull();
    });

    it('reports lastErrorObject with includeResultMetadata', async () => {
      const c = coll('jobs');
      const updated = await c.findOneAndUpdate({ _id: 'a' } as Document, { $inc: { prio: 1 } }, { includeResultMetadata: true, returnDocument: 'after' });
      expect(updated.lastErrorObject).toMatchObject({ n: 1, updatedExisting: true });
      expect(updated.value).toMatchObject({ prio: 2 });
      const upserted = await c.findOneAndUpdate({ _id: 'z' } as Document, { $set: { prio: 0 } }, { includeResultMetadata: true, upsert: true });
      expect(upserted.lastErrorObject).toMatchObject({ n: 1, updatedExisting: false, upserted: 'z' });
      expect(upserted.value).toBeNull();
    });

    it('upserts with a pipeline and returns the new document', async () => {
      const c = coll('jobs');
      const pipeline = [{ $set: { n: { $add: [{ $ifNull: ['$n', 0] }, 1] }, touched: '$$NOW' } }];
      const first = await c.findOneAndUpdate({ _id: 'new' } as Document, pipeline, { upsert: true, returnDocument: 'after' });
      expect(first).toMatchObject({ _id: 'new', n: 1 });
      expect(first?.touched).toBeInstanceOf(Date);
      const second = await c.findOneAndUpdate({ _id: 'new' } as Document, pipeline, { upsert: true, returnDocument: 'after' });
      expect(second).toMatchObject({ _id: 'new', n: 2 });
    });

    it('replaces and deletes', async () => {
      const c = coll('jobs');
      const replaced = await c.findOneAndReplace({ _id: 'a' } as Document, { prio: 9 }, { returnDocument: 'after' });
      expect(replaced).toEqual({ _id: 'a', prio: 9 });
      // A missing sort field sorts as null, before numbers: 'a' no longer has `due`.
      expect(await c.findOne({}, { sort: { due: 1 } })).toMatchObject({ _id: 'a' });
      const deleted = await c.findOneAndDelete({ due: { $exists: true } }, { sort: { due: 1 } });
      expect(deleted).toMatchObject({ _id: 'c' });
      expect(await c.countDocuments()).toBe(2);
    });
  });

  describe('counting, distinct and aggregation', () => {
    beforeEach(async () => {
      await coll('t').insertMany([
        { venue: 'a', w: 1, tags: ['x', 'y'] },
        { venue: 'a', w: 2, tags: ['y'] },
        { venue: 'b', w: 4, tags: [] },
        { venue: 'c', w: 8 },
      ]);
    });

    it('counts with count, countDocuments and estimatedDocumentCount', async () => {
      const c = coll('t');
      expect(await c.estimatedDocumentCount()).toBe(4);
      expect(await c.countDocuments({ w: { $gt: 1 } })).toBe(3);
      expect(await c.countDocuments({}, { skip: 1, limit: 2 })).toBe(2);
      expect((await db.command({ count: 't', query: { venue: 'a' } })).n).toBe(2);
      expect(await coll('absent').estimatedDocumentCount()).toBe(0);
    });

    it('lists distinct values, flattening arrays', async () => {
      const c = coll('t');
      expect((await c.distinct('venue')).sort()).toEqual(['a', 'b', 'c']);
      expect((await c.distinct('tags')).sort()).toEqual(['x', 'y']);
      expect(await c.distinct('venue', { w: { $gte: 4 } })).toEqual(expect.arrayContaining(['b', 'c']));
    });

    it('runs $match, $group, $sort, $skip, $limit, $project and $count', async () => {
      const c = coll('t');
      const grouped = await c
        .aggregate([
          { $match: { w: { $lt: 8 } } },
          { $group: { _id: '$venue', total: { $sum: '$w' }, n: { $sum: 1 } } },
          { $sort: { total: -1 } },
          { $project: { _id: 0, venue: '$_id', total: 1, n: 1 } },
        ])
        .toArray();
      expect(grouped).toEqual([
        { total: 4, n: 1, venue: 'b' },
        { total: 3, n: 2, venue: 'a' },
      ]);
      const paged = await c.aggregate([{ $sort: { w: 1 } }, { $skip: 1 }, { $limit: 2 }, { $project: { w: 1, _id: 0 } }]).toArray();
      expect(paged).toEqual([{ w: 2 }, { w: 4 }]);
      expect(await c.aggregate([{ $match: { venue: 'a' } }, { $count: 'n' }]).toArray()).toEqual([{ n: 2 }]);
      const batched = await c.aggregate([{ $sort: { w: 1 } }], { batchSize: 1 }).toArray();
      expect(batched.map((d) => d.w)).toEqual([1, 2, 4, 8]);
    });
  });

  describe('collections and indexes', () => {
    it('creates, lists and drops collections', async () => {
      await db.createCollection('one');
      await coll('two').insertOne({});
      const names = (await db.listCollections().toArray()).map((c) => c.name).sort();
      expect(names).toEqual(['one', 'two']);
      expect((await db.listCollections({ name: 'one' }).toArray()).map((c) => c.name)).toEqual(['one']);
      expect((await serverError(db.createCollection('one'))).code).toBe(48);
      expect(await coll('one').drop()).toBe(true);
      expect((await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name)).toEqual(['two']);
    });

    it('creates, lists and drops indexes', async () => {
      const c = coll('ix');
      expect(await c.createIndex({ a: 1, b: -1 }, { unique: true })).toBe('a_1_b_-1');
      expect(await c.createIndex({ at: 1 }, { expireAfterSeconds: 3600, name: 'ttl' })).toBe('ttl');
      expect(await c.createIndex({ a: 1, b: -1 }, { unique: true })).toBe('a_1_b_-1');
      const indexes = await c.listIndexes().toArray();
      expect(indexes.map((i) => i.name)).toEqual(['_id_', 'a_1_b_-1', 'ttl']);
      expect(indexes[1]).toMatchObject({ key: { a: 1, b: -1 }, unique: true });
      expect(indexes[2]).toMatchObject({ expireAfterSeconds: 3600 });
      await c.dropIndex('ttl');
      expect((await c.listIndexes().toArray()).map((i) => i.name)).toEqual(['_id_', 'a_1_b_-1']);
      expect((await serverError(c.dropIndex('nope'))).code).toBe(27);
      await c.dropIndexes();
      expect((await c.listIndexes().toArray()).map((i) => i.name)).toEqual(['_id_']);
      expect((await serverError(coll('absent').listIndexes().toArray())).code).toBe(26);
    });

    it('renames a collection with its documents and indexes', async () => {
      await coll('from').insertOne({ k: 1 });
      await coll('from').createIndex({ k: 1 }, { unique: true });
      await coll('taken').insertOne({ k: 2 });
      expect((await serverError(coll('from').rename('taken'))).code).toBe(48);
      await coll('from').rename('to');
      expect(await coll('to').findOne({}, { projection: { _id: 0 } })).toEqual({ k: 1 });
      expect((await coll('to').listIndexes().toArray()).map((i) => i.name)).toEqual(['_id_', 'k_1']);
      expect((await serverError(coll('to').insertOne({ k: 1 }))).code).toBe(11000);
      expect((await db.listCollections().toArray()).map((c) => c.name).sort()).toEqual(['taken', 'to']);
      await coll('to').rename('taken', { dropTarget: true });
      expect(await coll('taken').countDocuments()).toBe(1);
      expect((await serverError(coll('missing').rename('x'))).code).toBe(26);
    });

    it('drops a database', async () => {
      await coll('x').insertOne({ a: 1 });
      await db.dropDatabase();
      expect(await db.listCollections().toArray()).toEqual([]);
      expect(await coll('x').countDocuments()).toBe(0);
    });
  });

  describe('errors', () => {
    it('rejects an unknown command with CommandNotFound naming it', async () => {
      const err = await serverError(db.command({ frobnicate: 1 }));
      expect(err.code).toBe(59);
      expect(err.codeName).toBe('CommandNotFound');
      expect(err.errmsg).toContain("no such command: 'frobnicate'");
    });

    it('rejects an unknown option of a known command naming it', async () => {
      const err = await serverError(db.command({ find: 'x', frobnicateOption: true }));
      expect(err.code).toBe(40415);
      expect(err.errmsg).toContain('frobnicateOption');
    });

    it('rejects an unknown update operator', async () => {
      const err = await serverError(coll('x').updateOne({}, { $frobnicate: { a: 1 } } as Document));
      expect(err.code).toBe(9);
      expect(err.errmsg).toContain('$frobnicate');
    });
  });

  describe('atomicity under concurrency', () => {
    it('never loses a $inc from 20 clients x 50 concurrent findOneAndUpdate', async () => {
      await coll('counter').insertOne({ _id: 'n', v: 0 } as Document);
      const clients = await Promise.all(Array.from({ length: 20 }, () => new MongoClient(urlFor(db.databaseName)).connect()));
      try {
        const seen = await Promise.all(
          clients.flatMap((c) =>
            Array.from({ length: 50 }, () =>
              c
                .db()
                .collection('counter')
                .findOneAndUpdate({ _id: 'n' } as Document, { $inc: { v: 1 } }, { returnDocument: 'after' }),
            ),
          ),
        );
        expect((await coll('counter').findOne({ _id: 'n' } as Document))?.v).toBe(1000);
        // Every caller saw a distinct post-increment value: no two read-modify-writes interleaved.
        expect(new Set(seen.map((d) => d?.v)).size).toBe(1000);
      } finally {
        await Promise.all(clients.map((c) => c.close()));
      }
    });

    it('keeps a fixed-window budget pipeline within its limit from many connections', async () => {
      const periodMs = 250;
      const limit = 10;
      const weight = 1;
      const budgets = coll('budgets');
      await budgets.insertOne({ _id: 'venue', windowStart: 0, used: 0, limit } as Document);
      // One atomic update: align the window to the server clock ($$NOW), reset it if expired,
      // then spend only when the weight still fits.
      const acquire = fixedWindowAcquire(periodMs, weight);
      const clients = await Promise.all(Array.from({ length: 8 }, () => new MongoClient(urlFor(db.databaseName)).connect()));
      const grantsPerWindow = new Map<number, number>();
      // At least a second of contention, and on until the budget was seen spent to its limit in some window
      // and more than one window passed (a busy machine may need longer); the invariant is checked either way.
      const minEnd = Date.now() + 1_000;
      const giveUp = Date.now() + 30_000;
      const enough = (): boolean => Date.now() >= minEnd && grantsPerWindow.size >= 2 && Math.max(...grantsPerWindow.values()) === limit;
      try {
        await Promise.all(
          clients.flatMap((c) =>
            Array.from({ length: 4 }, async () => {
              while (!enough() && Date.now() < giveUp) {
                const doc = await c
                  .db()
                  .collection('budgets')
                  .findOneAndUpdate({ _id: 'venue' } as Document, acquire, { returnDocument: 'after' });
                if (doc?.granted === true) {
                  const ws = Number(doc.windowStart);
                  expect(ws % periodMs).toBe(0);
                  grantsPerWindow.set(ws, (grantsPerWindow.get(ws) ?? 0) + weight);
                }
              }
            }),
          ),
        );
      } finally {
        await Promise.all(clients.map((c) => c.close()));
      }
      expect(grantsPerWindow.size).toBeGreaterThanOrEqual(2);
      for (const spent of grantsPerWindow.values()) expect(spent).toBeLessThanOrEqual(limit);
      expect(Math.max(...grantsPerWindow.values())).toBe(limit);
    });
  });
});
