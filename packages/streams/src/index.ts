export { STREAM_DEFAULTS } from './stream-defaults.js';
export {
  type StreamEvent,
  type StreamRestRequest,
  type StreamSession,
  type StreamSessionOptions,
  type StreamSessionStats,
  type StreamState,
  type TimeQuality,
} from './stream-session.js';
export {
  BinanceStreamSession,
  BINANCE_AGG_TRADES_WEIGHT,
  BINANCE_CONNECTION_ATTEMPTS,
  BINANCE_MAX_STREAMS_PER_CONNECTION,
  type BinanceStreamSessionOptions,
} from './binance-stream-session.js';
export { KrakenStreamSession, type KrakenStreamSessionOptions } from './kraken-stream-session.js';
export { StreamLeases, streamLeaseKeys, type StreamLeasesOptions, type StreamLostReason, type LeaseCycle, type StreamHolder } from './stream-leases.js';
export { streamLiveKey, readStreamLive, publishStreamLive, type StreamLiveState } from './stream-live.js';
export { ConnectAttempts, CONNECT_ATTEMPT_LIMITS, type ConnectAttempt, type ConnectAttemptLimit, type ConnectAttemptsOptions } from './connect-attempts.js';
export { StreamCheckpoints } from './stream-checkpoints.js';
export { StreamMetrics } from './stream-metrics.js';
export { StreamRunner, type StreamRunnerOptions, type StreamHealth, type StreamEndpoints } from './stream-runner.js';
