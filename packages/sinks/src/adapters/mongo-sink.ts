import { MongoBulkWriteError, MongoClient, type Collection, type Db, type Document } from 'mongodb';
import type { Candle } from '@tickfleet/core';
import type { RetryOptions } from '../internal/sink-health.js';
import { RetryingSink } from '../internal/retrying-sink.js';
import type { KeyedEnvelope } from '../records.js';
import type { DataReader, ErrorSample, Sink } from '../sink.js';
import { MongoDataReader } from './mongo-data-reader.js';
import { SINK_DEFAULTS } from '../sink-defaults.js';

const DUPLICATE_KEY = 11000;

export interface MongoSinkOptions extends RetryOptions {
  /** Database name when the URL has no path. @defaultValue {@link SINK_DEFAULTS.mongoDatabase} */
  database?: string;
  /** Driver server selection timeout: how long one attempt waits for a reachable server. @defaultValue {@link SINK_DEFAULTS.mongoServerSelectionTimeoutMs} */
  serverSelectionTimeoutMs?: number;
  /** Driver socket timeout: a stalled server fails the attempt after this long. @defaultValue {@link SINK_DEFAULTS.mongoSocketTimeoutMs} */
  socketTimeoutMs?: number;
  /** @defaultValue {@link SINK_DEFAULTS.mongoConnectTimeoutMs} */
  connectTimeoutMs?: number;
}

/**
 * MongoDB sink: unordered `insertMany` into `envelopes` (`_id` = dedup key) and `candles`
 * (`_id` = candle key, plus a unique index on venue/symbol/timeframe/openTime). Duplicate-key
 * write errors (11000) are counted as duplicates, never fatal; anything else fails the attempt.
 */
export class MongoSink extends RetryingSink implements Sink {
  readonly adapter = 'mongodb' as const;
  readonly reader: DataReader;
  private readonly client: MongoClient;
  private readonly db: Db;
  private indexesReady = false;
  private connecting: Promise<void> | undefined;

  constructor(url: string, options: MongoSinkOptions = {}) {
    super('mongodb', options);
    this.client = new MongoClient(url, {
      serverSelectionTimeoutMS: options.serverSelectionTimeoutMs ?? SINK_DEFAULTS.mongoServerSelectionTimeoutMs,
      socketTimeoutMS: options.socketTimeoutMs ?? SINK_DEFAULTS.mongoSocketTimeoutMs,
      connectTimeoutMS: options.connectTimeoutMs ?? SINK_DEFAULTS.mongoConnectTimeoutMs,
    });
    const pathDb = decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));
    this.db = this.client.db(pathDb || options.database || SINK_DEFAULTS.mongoDatabase);
    this.reader = new MongoDataReader(this.envelopes, this.candles, this.db.collection('ingest_errors'), () => this.connect());
  }

  private get envelopes(): Collection<Document> {
    return this.db.collection('envelopes');
  }

  private get candles(): Collection<Document> {
    return this.db.collection('candles');
  }

  protected async storeBatch(valid: KeyedEnvelope[]): Promise<number> {
    const candleDocs: Document[] = [];
    const envelopeDocs: Document[] = [];
    for (const k of valid) {
      if (k.envelope.channel === 'candles') candleDocs.push(candleDoc(k));
      else envelopeDocs.push(envelopeDoc(k));
    }
    await this.ensureIndexes();
    const [a, b] = await Promise.all([insertUnordered(this.candles, candleDocs), insertUnordered(this.envelopes, envelopeDocs)]);
    return a + b;
  }

  async writeErrors(samples: readonly ErrorSample[]): Promise<void> {
    if (samples.length === 0) return;
    await this.connect();
    await this.db.collection('ingest_errors').insertMany(samples.map((s) => ({ ...s })));
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  /**
   * Connects explicitly: an operation that auto-connects to a server that is down closes the
   * client's topology for good ("Topology is closed"), while a failed `connect()` can be retried.
   * Once connected, the driver's monitors follow the server through later outages.
   */
  private connect(): Promise<void> {
    this.connecting ??= this.client.connect().then(
      () => undefined,
      (err: unknown) => {
        this.connecting = undefined;
        throw err;
      },
    );
    return this.connecting;
  }

  private async ensureIndexes(): Promise<void> {
    await this.connect();
    if (this.indexesReady) return;
    await this.candles.createIndex({ venue: 1, symbol: 1, timeframe: 1, openTime: 1 }, { unique: true, name: 'candle_key' });
    await this.envelopes.createIndex({ venue: 1, channel: 1, symbol: 1, receivedAtMs: 1 }, { name: 'envelope_stream' });
    this.indexesReady = true;
  }
}

/** Inserts what is new and returns how many; duplicate keys are expected on replays and re-runs. */
async function insertUnordered(coll: Collection<Document>, docs: Document[]): Promise<number> {
  if (docs.length === 0) return 0;
  try {
    const res = await coll.insertMany(docs, { ordered: false });
    return res.insertedCount;
  } catch (err) {
    if (!(err instanceof MongoBulkWriteError)) throw err;
    const writeErrors = Array.isArray(err.writeErrors) ? err.writeErrors : [err.writeErrors];
    if (writeErrors.length === 0 || writeErrors.some((w) => w.code !== DUPLICATE_KEY)) throw err;
    // Unordered: every non-duplicate document was inserted.
    return docs.length - writeErrors.length;
  }
}

function candleDoc({ key, envelope: e }: KeyedEnvelope): Document {
  const c = e.payload as Candle;
  return {
    _id: key.slice('mid:'.length),
    venue: c.venue,
    symbol: c.symbol,
    timeframe: c.timeframe,
    openTime: c.openTime,
    open: c.open,
    high: c.high,
    low: c.low,
    close: c.close,
    volume: c.volume,
    trades: c.trades ?? null,
    serverTimeMs: e.serverTimeMs ?? null,
    receivedAtMs: e.receivedAtMs,
  };
}

function envelopeDoc({ key, envelope }: KeyedEnvelope): Document {
  return { _id: key, ...envelope };
}
