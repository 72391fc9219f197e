import type Database from 'better-sqlite3';
import { timeframeMs, type Channel, type Envelope, type Timeframe } from '@tickfleet/core';
import type { CandleQuery, CandleSummary, DataReader, EnvelopeQuery, Interval, StoredCandle } from '../sink.js';

const PAGE = 1000;
const MIN_MS = Number.MIN_SAFE_INTEGER;
const MAX_MS = Number.MAX_SAFE_INTEGER;

interface CandleRow {
  venue: string;
  symbol: string;
  timeframe: Timeframe;
  open_time: number;
  open: string;
  high: string;
  low: string;
  close: string;
  volume: string;
  trades: number | null;
  server_time_ms: number | null;
  received_at_ms: number;
}

interface EnvelopeRow {
  key: string;
  venue: string;
  channel: Channel;
  symbol: string;
  message_id: string | null;
  sequence: number | null;
  server_time_ms: number | null;
  received_at_ms: number;
  payload: string;
}

/** Index range scans over the SQLite sink's tables; pages by key so no cursor is held across awaits. */
export class SqliteDataReader implements DataReader {
  constructor(private readonly db: Database.Database) {}

  async countCandles(q: CandleQuery): Promise<CandleSummary> {
    const row = this.db
      .prepare(
        `SELECT COUNT(*) AS count, MIN(open_time) AS first, MAX(open_time) AS last FROM candles
         WHERE venue = ? AND symbol = ? AND timeframe = ? AND open_time >= ? AND open_time < ?`,
      )
      .get(q.venue, q.symbol, q.timeframe, q.fromMs ?? MIN_MS, q.toMs ?? MAX_MS) as { count: number; first: number | null; last: number | null };
    return { count: row.count, firstOpenTime: row.first, lastOpenTime: row.last };
  }

  async *streamCandles(q: CandleQuery): AsyncIterable<StoredCandle> {
    const stmt = this.db.prepare(
      `SELECT * FROM candles WHERE venue = ? AND symbol = ? AND timeframe = ? AND open_time >= ? AND open_time < ?
       ORDER BY open_time LIMIT ${PAGE}`,
    );
    let from = q.fromMs ?? MIN_MS;
    for (;;) {
      const rows = stmt.all(q.venue, q.symbol, q.timeframe, from, q.toMs ?? MAX_MS) as CandleRow[];
      for (const r of rows) {
        yield {
          venue: r.venue,
          symbol: r.symbol,
          timeframe: r.timeframe,
          openTime: r.open_time,
          open: r.open,
          high: r.high,
          low: r.low,
          close: r.close,
          volume: r.volume,
          trades: r.trades,
          receivedAtMs: r.received_at_ms,
          serverTimeMs: r.server_time_ms,
        };
      }
      const last = rows[rows.length - 1];
      if (rows.length < PAGE || !last) return;
      from = last.open_time + 1;
    }
  }

  async missingIntervals(q: CandleQuery): Promise<Interval[]> {
    const tfMs = timeframeMs(q.timeframe);
    const rows = this.db
      .prepare(
        `SELECT prev, open_time FROM (
           SELECT open_time, LAG(open_time) OVER (ORDER BY open_time) AS prev FROM candles
           WHERE venue = ? AND symbol = ? AND timeframe = ? AND open_time >= ? AND open_time < ?
         ) WHERE prev IS NOT NULL AND open_time - prev > ? ORDER BY open_time`,
      )
      .all(q.venue, q.symbol, q.timeframe, q.fromMs ?? MIN_MS, q.toMs ?? MAX_MS, tfMs) as Array<{ prev: number; open_time: number }>;
    return rows.map((r) => ({ fromMs: r.prev + tfMs, toMs: r.open_time }));
  }

  async countEnvelopes(q: EnvelopeQuery): Promise<number> {
    const { where, params } = envelopeWhere(q);
    const row = this.db.prepare(`SELECT COUNT(*) AS n FROM envelopes ${where}`).get(...params) as { n: number };
    return row.n;
  }

  async *streamEnvelopes(q: EnvelopeQuery): AsyncIterable<{ key: string; envelope: Envelope }> {
    const { where, params } = envelopeWhere(q);
    // Page by (received_at_ms, key) so equal receive times never skip or repeat a record.
    const stmt = this.db.prepare(
      `SELECT * FROM envelopes ${where ? `${where} AND` : 'WHERE'} (received_at_ms > ? OR (received_at_ms = ? AND key > ?))
       ORDER BY received_at_ms, key LIMIT ${PAGE}`,
    );
    let afterMs = MIN_MS;
    let afterKey = '';
    for (;;) {
      const rows = stmt.all(...params, afterMs, afterMs, afterKey) as EnvelopeRow[];
      for (const r of rows) {
        const envelope: Envelope = {
          v: 1,
          venue: r.venue,
          channel: r.channel,
          symbol: r.symbol,
          receivedAtMs: r.received_at_ms,
          payload: JSON.parse(r.payload) as Record<string, unknown>,
          ...(r.message_id === null ? {} : { messageId: r.message_id }),
          ...(r.sequence === null ? {} : { sequence: r.sequence }),
          ...(r.server_time_ms === null ? {} : { serverTimeMs: r.server_time_ms }),
        };
        yield { key: r.key, envelope };
      }
      const last = rows[rows.length - 1];
      if (rows.length < PAGE || !last) return;
      afterMs = last.received_at_ms;
      afterKey = last.key;
    }
  }

  async countErrors(): Promise<number> {
    return (this.db.prepare('SELECT COUNT(*) AS n FROM ingest_errors').get() as { n: number }).n;
  }
}

function envelopeWhere(q: EnvelopeQuery): { where: string; params: Array<string | number> } {
  const clauses: string[] = [];
  const params: Array<string | number> = [];
  const add = (clause: string, value: string | number | undefined): void => {
    if (value === undefined) return;
    clauses.push(clause);
    params.push(value);
  };
  add('venue = ?', q.venue);
  add('channel = ?', q.channel);
  add('symbol = ?', q.symbol);
  add('received_at_ms >= ?', q.fromMs);
  add('received_at_ms < ?', q.toMs);
  return { where: clauses.length ? `WHERE ${clauses.join(' AND ')}` : '', params };
}
