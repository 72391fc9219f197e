import type { Clock, Envelope, StreamChannel } from '@tickfleet/core';

export type StreamState = 'connecting' | 'live' | 'resyncing' | 'backoff' | 'stopped';

/** A REST call a session is about to make (book snapshot, trade healing): what the worker's budget gate spends. */
export interface StreamRestRequest {
  venue: string;
  endpoint: string;
  weight: number;
}

/**
 * Every break and every recovery a session sees. Symbols are tickfleet's canonical form (`BTC/USDT`);
 * id ranges are inclusive.
 */
export type StreamEvent =
  | { type: 'connected'; url: string; attempt: number }
  | { type: 'disconnected'; reason: string; code?: number }
  | { type: 'silent'; ms: number }
  | { type: 'gap'; symbol: string; channel: StreamChannel; fromId: number; toId: number }
  | { type: 'healed'; symbol: string; channel: StreamChannel; fromId: number; toId: number; restCalls: number }
  | { type: 'unhealed'; symbol: string; channel: StreamChannel; fromId: number; toId: number; reason: string }
  | { type: 'resync'; symbol: string; reason: string }
  | { type: 'checksum-mismatch'; symbol: string; expected: number; computed: number }
  | { type: 'garbled'; frames: number; binary: number; sinceLastReport: number }
  | { type: 'pipeline-error'; records: number; error: string; attempt: number }
  | { type: 'venue-error'; message: string };

/** Exchange time vs receive time of the session's data messages. */
export interface TimeQuality {
  /** Receive time minus exchange time, percentiles over the last {@link TIME_QUALITY_WINDOW} messages; null before the first. */
  skewP50Ms: number | null;
  skewP99Ms: number | null;
  /** Messages whose exchange time is earlier than the previous one of the same symbol and channel. */
  outOfOrder: number;
}

export interface StreamSessionStats {
  venue: string;
  state: StreamState;
  /** Clock time the current connection opened; null while not connected. */
  connectedSinceMs: number | null;
  /** Data messages received (trades, diffs, book updates), parsed or not. */
  messages: number;
  reconnects: number;
  /** Connection attempts made, with the instants of those inside the venue's limit window (for a fleet-wide count). */
  connectAttempts: number;
  recentConnectAttemptsMs: number[];
  gapsFound: number;
  gapsHealed: number;
  gapsUnhealed: number;
  resyncs: number;
  checksumMismatches: number;
  garbledFrames: number;
  pipelineErrors: number;
  /** Clock ms since the last message of any kind; null before the first. */
  lastMessageAgeMs: number | null;
  /** Envelopes handed to `onRecords` and accepted. */
  recordsDelivered: number;
  /** The last trade id seen per symbol: a new session started with `resumeTradeIds` from it heals the hole between them. */
  lastTradeIds: Record<string, number>;
  timeQuality: TimeQuality;
}

/** One venue connection serving a group of symbols and channels. */
export interface StreamSession {
  readonly venue: string;
  /** Starts connecting in the background and keeps a connection open (reconnecting with backoff) until `stop`; resolves at once. */
  start(): Promise<void>;
  /** Closes the connection, waits for the records in hand to be delivered (or reported) and resolves when closed. */
  stop(): Promise<void>;
  stats(): StreamSessionStats;
}

/** Options every stream session takes. */
export interface StreamSessionOptions {
  /** Symbols in tickfleet form (`BTC/USDT`). */
  symbols: readonly string[];
  channels: readonly StreamChannel[];
  /** Receives the records, awaited before the next batch: a slow pipeline slows the session, it never loses records. */
  onRecords(envelopes: Envelope[]): Promise<void>;
  onEvent?(event: StreamEvent): void;
  /** Awaited before every REST call the session makes; may throw (e.g. budget exhausted) to refuse it. */
  beforeRestRequest?(request: StreamRestRequest): Promise<void>;
  /** Awaited before every connection attempt: lets the fleet share a venue's connection-attempt limit. */
  beforeConnect?(info: { venue: string }): Promise<void>;
  /** @defaultValue systemClock */
  clock?: Clock;
  /** A connection that received nothing (no data, heartbeat or ping) for this long is closed and reopened. @defaultValue {@link STREAM_DEFAULTS.silenceTimeoutMs} */
  silenceTimeoutMs?: number;
  /** Shortest clock time between two book snapshots of one symbol while live (one is always emitted after a sync). @defaultValue 1000 */
  bookSnapshotMs?: number;
  /** Levels per side in the book snapshots. @defaultValue 20 */
  bookLevels?: number;
  /** Reconnect backoff: first delay and cap, jittered. @defaultValue { initialMs: 500, maxMs: 30000 } */
  backoff?: { initialMs?: number; maxMs?: number };
  /** Last trade id already stored per symbol: the first trade streamed after it is checked for a gap. */
  resumeTradeIds?: Record<string, number>;
  /** Per-request timeout of the REST calls. @defaultValue 10000 */
  restTimeoutMs?: number;
}
