import { MongoClient } from 'mongodb';
import { type Clock, StoreUnavailableError } from '@tickfleet/core';
import type { StateStore } from '../state-store.js';
import { collections, ensureIndexes } from './documents.js';
import { MongoBackfillsRepo } from './mongo-backfills-repo.js';
import { MongoBudgetsRepo, unavailableOnNetworkError } from './mongo-budgets-repo.js';
import { MongoConnectorsRepo } from './mongo-connectors-repo.js';
import { MongoGapsRepo } from './mongo-gaps-repo.js';
import { MongoJobsRepo } from './mongo-jobs-repo.js';
import { MongoStreamsRepo } from './mongo-streams-repo.js';
import { MongoUniversesRepo } from './mongo-universes-repo.js';
import { STORE_DEFAULTS } from '../store-defaults.js';

export interface MongoStoreOptions {
  database: string;
  clock: Clock;
  /** Prefix of every collection name. @defaultValue {@link STORE_DEFAULTS.mongoCollectionPrefix} */
  collectionPrefix?: string;
  /** @defaultValue {@link STORE_DEFAULTS.mongoServerSelectionTimeoutMs} */
  serverSelectionTimeoutMs?: number;
}

/** The production state store on MongoDB (official driver). */
export class MongoStateStore implements StateStore {
  readonly kind = 'mongodb' as const;
  readonly connectors: MongoConnectorsRepo;
  readonly jobs: MongoJobsRepo;
  readonly budgets: MongoBudgetsRepo;
  readonly backfills: MongoBackfillsRepo;
  readonly gaps: MongoGapsRepo;
  readonly universes: MongoUniversesRepo;
  readonly streams: MongoStreamsRepo;

  private constructor(
    private readonly client: MongoClient,
    private readonly database: string,
    options: MongoStoreOptions,
  ) {
    const c = collections(client.db(database), options.collectionPrefix ?? STORE_DEFAULTS.mongoCollectionPrefix);
    const connectors = new MongoConnectorsRepo(c, options.clock);
    this.connectors = guardRepo(connectors);
    this.jobs = guardRepo(new MongoJobsRepo(c, options.clock));
    this.budgets = guardRepo(new MongoBudgetsRepo(c, (venue) => connectors.repairBudget(venue), options.clock));
    this.backfills = guardRepo(new MongoBackfillsRepo(c, options.clock));
    this.gaps = guardRepo(new MongoGapsRepo(c));
    this.universes = guardRepo(new MongoUniversesRepo(c, options.clock));
    this.streams = guardRepo(new MongoStreamsRepo(c, options.clock));
  }

  /** Connects, then creates the indexes the queries need; a server that cannot be reached is StoreUnavailableError. */
  static async open(url: string, options: MongoStoreOptions): Promise<MongoStateStore> {
    // Socket and connect timeouts bound how long a call waits on a server that accepted the
    // connection but stopped answering (a hung or SIGSTOPped mongod): without them the call waits
    // forever and the worker never learns to fall back. Store calls take milliseconds.
    const client = new MongoClient(url, {
      serverSelectionTimeoutMS: options.serverSelectionTimeoutMs ?? STORE_DEFAULTS.mongoServerSelectionTimeoutMs,
      socketTimeoutMS: 5000,
      connectTimeoutMS: 3000,
    });
    try {
      await client.connect();
      await ensureIndexes(collections(client.db(options.database), options.collectionPrefix ?? STORE_DEFAULTS.mongoCollectionPrefix));
    } catch (err) {
      await client.close().catch(() => undefined);
      throw new StoreUnavailableError(`cannot open MongoDB store ${redact(url)}: ${(err as Error).message}`, { cause: err });
    }
    return new MongoStateStore(client, options.database, options);
  }

  async ping(): Promise<void> {
    await unavailableOnNetworkError(() => this.client.db(this.database).command({ ping: 1 }));
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

/** Drops credentials from a URL before it goes into an error message or a log line. */
function redact(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@');
}

/**
 * Makes every call of a repository report an unreachable server as StoreUnavailableError, so a
 * worker puts the unit back (or falls back to its budget share) instead of failing it.
 */
function guardRepo<T extends object>(repo: T): T {
  return new Proxy(repo, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function' || prop === 'constructor') return value;
      return (...args: unknown[]) => unavailableOnNetworkError(() => Promise.resolve((value as (...a: unknown[]) => unknown).apply(target, args)));
    },
  });
}
