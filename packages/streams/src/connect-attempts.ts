import { randomUUID } from 'node:crypto';
import { ValidationError } from '@tickfleet/core';
import { luaCommand, QUEUE_PREFIX, venueKey, type LuaCommand, type RedisClient } from '@tickfleet/queues';
import { BINANCE_CONNECTION_ATTEMPTS } from './binance-stream-session.js';

const COMMANDS = new URL('./commands/', import.meta.url);

/** A venue's limit on new connections, counted over the whole fleet (it is per IP at the venue). */
export interface ConnectAttemptLimit {
  attempts: number;
  windowMs: number;
}

/** The venues' documented limits on new connections per IP. */
export const CONNECT_ATTEMPT_LIMITS: Readonly<Record<string, ConnectAttemptLimit>> = {
  binance: { attempts: BINANCE_CONNECTION_ATTEMPTS.limit, windowMs: BINANCE_CONNECTION_ATTEMPTS.windowMs },
};

export type ConnectAttempt = { allowed: true; remaining: number } | { allowed: false; retryAfterMs: number };

export interface ConnectAttemptsOptions {
  /** @defaultValue QUEUE_PREFIX ('tickfleet') */
  prefix?: string;
  /** Limits by venue; a venue without one is never refused. @defaultValue CONNECT_ATTEMPT_LIMITS */
  limits?: Readonly<Record<string, ConnectAttemptLimit>>;
}

/**
 * The fleet's shared count of venue connection attempts, which a stream session asks before it
 * connects or reconnects: workers behind one egress IP share the venue's per-IP budget, so a
 * reconnect storm across the fleet cannot get the IP banned. A sliding log in Redis (one sorted
 * set per venue, under the venue's hash tag) keeps any window of `windowMs` at or under the limit,
 * whether the venue counts in fixed or sliding windows.
 */
export class ConnectAttempts {
  private readonly prefix: string;
  private readonly limits: Readonly<Record<string, ConnectAttemptLimit>>;
  private readonly tryCmd: LuaCommand;

  constructor(redis: RedisClient, options: ConnectAttemptsOptions = {}) {
    this.prefix = options.prefix ?? QUEUE_PREFIX;
    this.limits = options.limits ?? CONNECT_ATTEMPT_LIMITS;
    for (const [venue, limit] of Object.entries(this.limits)) {
      if (!Number.isInteger(limit.attempts) || limit.attempts < 1 || !Number.isInteger(limit.windowMs) || limit.windowMs < 1) {
        throw new ValidationError(`connect attempt limit of ${venue}`, 'positive integers attempts and windowMs', limit);
      }
    }
    this.tryCmd = luaCommand(redis, COMMANDS, 'tryConnectAttempt-1.lua');
  }

  key(venue: string): string {
    return venueKey(this.prefix, venue, 'connect-attempts');
  }

  /** Counts one attempt to connect to `venue` if the fleet is under the venue's limit; else says how long to wait. */
  async tryConnectAttempt(venue: string): Promise<ConnectAttempt> {
    const key = this.key(venue);
    const limit = this.limits[venue];
    if (!limit) return { allowed: true, remaining: Number.POSITIVE_INFINITY };
    const [ok, n] = (await this.tryCmd([key], [limit.attempts, limit.windowMs, randomUUID()])) as [number, number];
    return ok === 1 ? { allowed: true, remaining: Number(n) } : { allowed: false, retryAfterMs: Number(n) };
  }
}
