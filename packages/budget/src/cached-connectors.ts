import { StoreUnavailableError, type Clock, type Connector } from '@tickfleet/core';

/** Where the Redis budgets read a venue's limit, policy and status (the state store's `connectors`). */
export interface ConnectorLookup {
  get(venue: string): Promise<Connector | null>;
}

/**
 * A venue's connector as read from the state store at most once per `ttlMs`, for the Redis
 * budgets that read its limit on every acquire. While the store is away, the connector last read
 * is used: the store may be down while Redis is not, and the limits last read keep the fleet
 * coordinated.
 */
export class CachedConnectors {
  private readonly cache = new Map<string, { connector: Connector | null; readAtMs: number }>();

  constructor(
    private readonly lookup: ConnectorLookup,
    private readonly clock: Clock,
    private readonly ttlMs: number,
  ) {}

  async get(venue: string): Promise<Connector | null> {
    const cached = this.cache.get(venue);
    const local = this.clock.now();
    if (cached && local - cached.readAtMs < this.ttlMs) return cached.connector;
    try {
      const connector = await this.lookup.get(venue);
      this.cache.set(venue, { connector, readAtMs: local });
      return connector;
    } catch (err) {
      if (cached && err instanceof StoreUnavailableError) return cached.connector;
      throw err;
    }
  }
}
