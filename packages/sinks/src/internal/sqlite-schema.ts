/**
 * One table of non-candle envelopes keyed by dedup key, one typed candles table keyed by
 * (venue, symbol, timeframe, open_time) so count/export/gap detection are index range scans,
 * and the sampled errors stream. WITHOUT ROWID: the key is the clustered index.
 */
export const SQLITE_SCHEMA = `
CREATE TABLE IF NOT EXISTS envelopes (
  key TEXT PRIMARY KEY,
  venue TEXT NOT NULL,
  channel TEXT NOT NULL,
  symbol TEXT NOT NULL,
  message_id TEXT,
  sequence INTEGER,
  server_time_ms INTEGER,
  received_at_ms INTEGER NOT NULL,
  payload TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS envelopes_stream ON envelopes (venue, channel, symbol, received_at_ms);
CREATE TABLE IF NOT EXISTS candles (
  venue TEXT NOT NULL,
  symbol TEXT NOT NULL,
  timeframe TEXT NOT NULL,
  open_time INTEGER NOT NULL,
  open TEXT NOT NULL,
  high TEXT NOT NULL,
  low TEXT NOT NULL,
  close TEXT NOT NULL,
  volume TEXT NOT NULL,
  trades INTEGER,
  server_time_ms INTEGER,
  received_at_ms INTEGER NOT NULL,
  PRIMARY KEY (venue, symbol, timeframe, open_time)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ingest_errors (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at_ms INTEGER NOT NULL,
  venue TEXT,
  channel TEXT,
  field TEXT NOT NULL,
  message TEXT NOT NULL,
  sample TEXT NOT NULL
);
`;
