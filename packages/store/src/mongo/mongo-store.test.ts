import { randomUUID } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { systemClock } from '@tickfleet/core';
import { openStore } from '../open-store.js';
import { collections } from './documents.js';
import { MongoJobsRepo } from './mongo-jobs-repo.js';
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

  it('claims due jobs a batch at a time: a few commands for thousands of jobs, each job leased once', async () => {
    const prefix = `cl${randomUUID().slice(0, 8)}_`;
    const store = await openStore(dbUrl(), { collectionPrefix: prefix });
    const client = new MongoClient(url, { monitorCommands: true });
    try {
      await client.connect();
      await store.connectors.upsert({ venue: 'binance', baseUrl: 'https://api.binance.com', rateLimit: { limit: 1200, periodMs: 60_000 } });
      for (let i = 0; i < 2500; i++) await store.jobs.upsert({ venue: 'binance', type: 'ohlcv', symbol: `S${i}/USDT`, timeframe: '1m', priority: i % 3 });
      const jobs = new MongoJobsRepo(collections(client.db(database), prefix), systemClock);
      const commands: string[] = [];
      client.on('commandStarted', (e) => commands.push(e.commandName));
      const claimed = await jobs.claimDue(Date.now(), 2500, 60_000, 'test');
      expect(new Set(claimed.map((j) => j.id)).size).toBe(2500);
      // In claim order: priority, then due time and id.
      expect(claimed.map((j) => j.priority)).toEqual([...claimed.map((j) => j.priority)].sort((a, b) => b - a));
      // The active venues, then per 1,000 jobs a find of ids, an updateMany and a find (with the
      // cursor's getMores); one findAndModify per job was 2,500 commands.
      expect(commands.filter((c) => c !== 'getMore')).toEqual(['distinct', ...Array(3).fill(['find', 'update', 'find']).flat()]);
      expect(await jobs.claimDue(Date.now(), 10, 60_000, 'test')).toEqual([]);
    } finally {
      await client.close();
      await store.close();
    }
  });

  it('fails with StoreUnavailableError when no server answers', async () => {
    await expect(openStore('mongodb://127.0.0.1:1/x', { serverSelectionTimeoutMs: 300 })).rejects.toMatchObject({ code: 'E_STORE_UNAVAILABLE' });
  });
});
