import { type Clock, type Connector, type ConnectorInput, ConnectorStatus, effectiveLimit, NotFoundError, parseOrThrow } from '@tickfleet/core';
import type { ConnectorsRepo } from '../state-store.js';
import { normalizeConnector } from '../internal/inputs.js';
import { type ConnectorDoc, type MongoCollections, toConnector } from './documents.js';

export class MongoConnectorsRepo implements ConnectorsRepo {
  constructor(
    private readonly c: MongoCollections,
    private readonly clock: Clock,
  ) {}

  async upsert(input: ConnectorInput): Promise<Connector> {
    const { connector: v, given } = normalizeConnector(input);
    const now = this.clock.now();
    // Fields the caller gave go to $set; defaults for the ones left out only apply on insert,
    // so an update keeps what is stored. One findOneAndUpdate keyed by venue: never two records.
    const set: Record<string, unknown> = {
      venue: v.venue,
      baseUrl: v.baseUrl,
      'rateLimit.limit': v.rateLimit.limit,
      'rateLimit.periodMs': v.rateLimit.periodMs,
      updatedAt: now,
    };
    const onInsert: Record<string, unknown> = { createdAt: now };
    const put = (given: boolean, path: string, value: unknown): void => void ((given ? set : onInsert)[path] = value);
    put(given.status, 'status', v.status);
    put(given.policy, 'rateLimit.policy', v.rateLimit.policy);
    put(given.headroom, 'rateLimit.headroom', v.rateLimit.headroom);
    put(given.maxInflight, 'maxInflight', v.maxInflight);
    put(given.freezeMs, 'freezeMs', v.freezeMs);
    put(given.freezeMaxMs, 'freezeMaxMs', v.freezeMaxMs);
    put(given.freezeResetMs, 'freezeResetMs', v.freezeResetMs ?? null);
    put(given.pacing, 'pacing', v.pacing ?? null);
    put(given.aimd, 'aimd', v.aimd);
    put(given.bookCooldown, 'bookCooldown', v.bookCooldown);
    put(given.bookLoop, 'bookLoop', v.bookLoop ?? null);
    const doc = await this.c.connectors.findOneAndUpdate({ _id: v.venue }, { $set: set, $setOnInsert: onInsert }, { upsert: true, returnDocument: 'after' });
    if (!doc) throw new NotFoundError('connector', v.venue);
    const connector = toConnector(doc);
    await this.syncBudget(connector);
    return connector;
  }

  async get(venue: string): Promise<Connector | null> {
    const doc = await this.c.connectors.findOne({ _id: venue });
    return doc ? toConnector(doc) : null;
  }

  async list(): Promise<Connector[]> {
    return (await this.c.connectors.find({}).sort({ _id: 1 }).toArray()).map(toConnector);
  }

  async setStatus(venue: string, status: ConnectorStatus): Promise<Connector> {
    const valid = parseOrThrow(ConnectorStatus, status, 'status');
    const doc: ConnectorDoc | null = await this.c.connectors.findOneAndUpdate(
      { _id: venue },
      { $set: { status: valid, updatedAt: this.clock.now() } },
      { returnDocument: 'after' },
    );
    if (!doc) throw new NotFoundError('connector', venue);
    const connector = toConnector(doc);
    await this.syncBudget(connector);
    return connector;
  }

  /**
   * Re-creates a venue's budget copy from its connector; false when there is no connector. Heals
   * the window between a connector write and its budget copy (a process dying in between).
   */
  async repairBudget(venue: string): Promise<boolean> {
    const connector = await this.get(venue);
    if (!connector) return false;
    await this.syncBudget(connector);
    return true;
  }

  /**
   * Copies policy and status onto the venue's budget document, which `acquire` reads in its one
   * update. Window/TAT state is left alone, so editing a connector never refills a spent window.
   */
  private async syncBudget(connector: Connector): Promise<void> {
    await this.c.budgets.updateOne(
      { _id: connector.venue },
      {
        $set: {
          policy: connector.rateLimit.policy,
          status: connector.status,
          limit: effectiveLimit(connector.rateLimit),
          periodMs: connector.rateLimit.periodMs,
        },
        $setOnInsert: { windowStart: null, used: 0, tat: null, at: 0, ok: false },
      },
      { upsert: true },
    );
  }
}
