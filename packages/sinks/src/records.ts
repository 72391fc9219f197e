import {
  BookSnapshot,
  Candle,
  Envelope,
  MarketRecord,
  PollErrorRecord,
  PollStatsRecord,
  OptionContract,
  StreamEventRecord,
  SeriesObservation,
  Trade,
  ValidationError,
  candleKey,
  dedupKey,
  optionContractKey,
  parseOrThrow,
  seriesObservationKey,
  type Channel,
} from '@tickfleet/core';

/** An envelope that passed validation, with its deterministic dedup key. */
export interface KeyedEnvelope {
  key: string;
  envelope: Envelope;
}

/**
 * Validates one raw record as Envelope v1 and, for typed channels, its payload
 * (`candles` -> Candle, `trades` -> Trade, `book` -> BookSnapshot, `options` -> OptionContract, `series` -> SeriesObservation,
 * `markets` -> MarketRecord, `poll_stats` -> PollStatsRecord, `poll_errors` -> PollErrorRecord, `stream_events` -> StreamEventRecord). Throws a ValidationError
 * naming the field path, e.g. `envelope.payload.openTime`.
 *
 * Candle envelopes must carry `messageId = candleKey(payload)` (it is filled in when absent), so
 * the envelope dedup key `mid:<candleKey>` and the candles table key always agree. Option
 * contracts likewise carry `optionContractKey(payload)`, so a re-fetched snapshot dedups, and
 * series envelopes `seriesObservationKey(payload)`, so a vintage fetched again dedups to the
 * record already stored.
 */
export function parseEnvelope(raw: unknown): Envelope {
  const env = parseOrThrow(Envelope, raw, 'envelope');
  const payloadSchema = payloadSchemaOf(env.channel);
  if (payloadSchema) {
    const payload = parseOrThrow(payloadSchema, env.payload, 'envelope.payload') as { venue: string; symbol: string };
    if (payload.venue !== env.venue) throw new ValidationError('envelope.payload.venue', `the envelope venue ${JSON.stringify(env.venue)}`, payload.venue);
    if (payload.symbol !== env.symbol)
      throw new ValidationError('envelope.payload.symbol', `the envelope symbol ${JSON.stringify(env.symbol)}`, payload.symbol);
  }
  if (env.channel === 'candles') {
    const key = candleKey(env.payload as Candle);
    if (env.messageId === undefined) return { ...env, messageId: key };
    if (env.messageId !== key) throw new ValidationError('envelope.messageId', `the candle key ${key}`, env.messageId);
  }
  if (env.channel === 'options') {
    const key = optionContractKey(env.payload as OptionContract);
    if (env.messageId === undefined) return { ...env, messageId: key };
    if (env.messageId !== key) throw new ValidationError('envelope.messageId', `the option contract key ${key}`, env.messageId);
  }
  if (env.channel === 'series') {
    const key = seriesObservationKey(env.payload as SeriesObservation);
    if (env.messageId === undefined) return { ...env, messageId: key };
    if (env.messageId !== key) throw new ValidationError('envelope.messageId', `the observation key ${key}`, env.messageId);
  }
  return env;
}

/** parseEnvelope plus its dedup key (priority `mid:` > `seq:` > `hash:`). */
export function keyEnvelope(raw: unknown): KeyedEnvelope {
  const envelope = parseEnvelope(raw);
  return { key: dedupKey(envelope), envelope };
}

function payloadSchemaOf(
  channel: Channel,
):
  | typeof Candle
  | typeof Trade
  | typeof BookSnapshot
  | typeof OptionContract
  | typeof SeriesObservation
  | typeof MarketRecord
  | typeof PollStatsRecord
  | typeof PollErrorRecord
  | typeof StreamEventRecord
  | undefined {
  switch (channel) {
    case 'candles':
      return Candle;
    case 'trades':
      return Trade;
    case 'book':
      return BookSnapshot;
    case 'markets':
      return MarketRecord;
    case 'poll_stats':
      return PollStatsRecord;
    case 'poll_errors':
      return PollErrorRecord;
    case 'stream_events':
      return StreamEventRecord;
    case 'options':
      return OptionContract;
    case 'series':
      return SeriesObservation;
    case 'files':
      return undefined;
  }
}
