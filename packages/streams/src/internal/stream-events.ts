import { jobId, type Envelope, type StreamEventRecord } from '@tickfleet/core';
import type { StreamEvent } from '../stream-session.js';

/** The session events kept as `stream_events` records. */
export type RecordedStreamEvent = Extract<StreamEvent, { type: StreamEventRecord['event'] }>;

/**
 * The gap-ledger job id of a stream symbol's unhealed trades: the instrument's trades job id
 * `<venue>:<SYMBOL>:-:trades` (so `tickfleet gaps list <id>` takes it). The ledger entries under
 * it have kind `trade-ids`, their `fromMs`/`toMs` holding trade ids `[first, last + 1)`.
 */
export function streamGapJobId(venue: string, symbol: string): string {
  return jobId({ venue, symbol, type: 'trades' });
}

/**
 * The `stream_events` envelope of a session event. Id ranges make gap, heal and unhealed records
 * of one range deduplicate across holders (two workers reporting the same hole store it once); a
 * resync or checksum mismatch is keyed by time and worker.
 */
export function streamEventEnvelope(venue: string, stream: string, workerId: string, event: RecordedStreamEvent, atMs: number): Envelope {
  const base = { venue, symbol: event.symbol, stream, workerId, event: event.type, atMs };
  let record: StreamEventRecord;
  let id: string;
  switch (event.type) {
    case 'gap':
      record = { ...base, fromId: event.fromId, toId: event.toId };
      id = `${event.fromId}-${event.toId}`;
      break;
    case 'healed':
      record = { ...base, fromId: event.fromId, toId: event.toId, restCalls: event.restCalls };
      id = `${event.fromId}-${event.toId}`;
      break;
    case 'unhealed':
      record = { ...base, fromId: event.fromId, toId: event.toId, reason: event.reason };
      id = `${event.fromId}-${event.toId}`;
      break;
    case 'resync':
      record = { ...base, reason: event.reason };
      id = `${atMs}:${workerId}`;
      break;
    case 'checksum-mismatch':
      record = { ...base, reason: `checksum ${event.computed} computed, venue sent ${event.expected}` };
      id = `${atMs}:${workerId}`;
      break;
  }
  return {
    v: 1,
    messageId: `${venue}:${event.symbol}:stream_events:${event.type}:${id}`,
    venue,
    channel: 'stream_events',
    symbol: event.symbol,
    receivedAtMs: atMs,
    payload: { ...record },
  };
}
