import { MongoClient } from 'mongodb';
import { type Clock, StoreUnavailableError } from '@tickfleet/core';
import type { StateStore } from '../state-store.js';
import { collections, ensureIndexes } from './documents.js';
import { MongoBackfillsRepo } from './mongo-backfills-repo.js';
import { MongoBudgetsRepo } from './mongo-budgets-repo.js';
import { MongoConnectorsRepo } from './mongo-connectors-repo.js';
import { MongoGapsRepo } from './mongo-gaps-repo.js';
import { MongoJobsRepo } from './mongo-jobs-repo.js';

export interface MongoStoreOptions {
  database: string;
  clock: Clock;
  /** Prefix of every collection name. @defaultValue '' */
  collectionPrefix?: string;
  /** @defaultValue 10000 */
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

  private constructor(
    private readonly client: MongoClient,
    private readonly database: string,
    options: MongoStoreOptions,
  ) {
    const c = collections(client.db(database), options.collectionPrefix ?? '');
    this.connectors = new MongoConnectorsRepo(c, options.clock);
    this.jobs = new MongoJobsRepo(c, options.clock);
    this.budgets = new MongoBudgetsRepo(c, (venue) => this.connectors.repairBudget(venue));
    this.backfills = new MongoBackfillsRepo(c, options.clock);
    this.gaps = new MongoGapsRepo(c);
  }

  /** Connects, then creates the indexes the queries need; a server that cannot be reached is StoreUnavailableError. */
  static async open(url: string, options: MongoStoreOptions): Promise<MongoStateStore> {
    const client = new MongoClient(url, { serverSelectionTimeoutMS: options.serverSelectionTimeoutMs ?? 10_000 });
    try {
      await client.connect();
      await ensureIndexes(collections(client.db(options.database), options.collectionPrefix ?? ''));
    } catch (err) {
      await client.close().catch(() => undefined);
      throw new StoreUnavailableError(`cannot open MongoDB store ${redact(url)}: ${(err as Error).message}`, { cause: err });
    }
    return new MongoStateStore(client, options.database, options);
  }

  async ping(): Promise<void> {
    await this.client.db(this.database).command({ ping: 1 });
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

/** Drops credentials from a URL before it goes into an error message or a log line. */
function redact(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@');
}
