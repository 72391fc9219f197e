import { randomUUID } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { openStore } from '../open-store.js';
import { describeStoreContract } from '../../test/store-contract.js';
import { describeStreamsContract } from '../../test/streams-contract.js';

/**
 * Runs against a real MongoDB when MONGO_URL is set, else against the in-repo wire-protocol test
 * server (@tickfleet/mongo-wire), imported lazily so this file does not depend on it otherwise.
 */
let url = process.env.MONGO_URL ?? '';
let stopServer: (() => Promise<void>) | undefined;
const database = `tickfleet_test_${randomUUID().slice(0, 8)}`;

beforeAll(async () => {
  if (!url) {
    const { startMongoWire } = await import('@tickfleet/mongo-wire');
    const server = await startMongoWire();
    url = server.url;
    stopServer = () => server.stop();
  }
});

afterAll(async () => {
  if (process.env.MONGO_URL) {
    const client = await MongoClient.connect(url);
    await client
      .db(database)
      .dropDatabase()
      .catch(() => undefined);
    await client.close();
  }
  await stopServer?.();
});

function dbUrl(): string {
  const [base, query] = url.split('?') as [string, string | undefined];
  const hostPart = base.replace(/^(mongodb(\+srv)?:\/\/[^/]+).*$/, '$1');
  return `${hostPart}/${database}${query ? `?${query}` : ''}`;
}

describeStoreContract('mongodb', (ns) => openStore(dbUrl(), { collectionPrefix: `${ns}_` }));
describeStreamsContract('mongodb', (ns) => openStore(dbUrl(), { collectionPrefix: `${ns}_` }));

describe('mongodb store specifics', () => {
  it('creates the indexes it needs at open', async () => {
    const prefix = `ix${randomUUID().slice(0, 8)}_`;
    const store = await openStore(dbUrl(), { collectionPrefix: prefix });
    const client = await MongoClient.connect(url);
    try {
      const names = async (c: string): Promise<string[]> =>
        (await client.db(database).collection(`${prefix}${c}`).listIndexes().toArray()).map((i) => String(i.name));
      expect(await names('jobs')).toEqual(expect.arrayContaining(['due', 'venue']));
      expect(await names('gaps')).toContain('job_range');
      expect(await names('backfills')).toContain('job');
    } finally {
      await client.close();
      await store.close();
    }
  });

  it('rebuilds a lost budget document from the connector on the next acquire', async () => {
    const prefix = `rb${randomUUID().slice(0, 8)}_`;
    const store = await openStore(dbUrl(), { collectionPrefix: prefix });
    const client = await MongoClient.connect(url);
    try {
      await store.connectors.upsert({ venue: 'binance', baseUrl: 'https://api.binance.com', rateLimit: { limit: 2, periodMs: 60_000, headroom: 1 } });
      // as if the process died between writing the connector and its budget copy
      await client
        .db(database)
        .collection(`${prefix}budgets`)
        .deleteOne({ _id: 'binance' as never });
      expect(await store.budgets.acquire('binance', 2)).toMatchObject({ ok: true, used: 2, limit: 2 });
      expect(await store.budgets.acquire('binance', 1)).toMatchObject({ ok: false, reason: 'exhausted' });
      expect(await store.budgets.acquire('nope', 1)).toMatchObject({ ok: false, reason: 'unknown-venue' });
    } finally {
      await client.close();
      await store.close();
    }
  });

  it('fails with StoreUnavailableError when no server answers', async () => {
    await expect(openStore('mongodb://127.0.0.1:1/x', { serverSelectionTimeoutMs: 300 })).rejects.toMatchObject({ code: 'E_STORE_UNAVAILABLE' });
  });
});
