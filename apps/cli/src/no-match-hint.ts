import type { StateStore } from '@tickfleet/store';

/** A symbol without separators and case: `BTCUSDT`, `btc-usdt` and `BTC/USDT` are one key. */
const spellingKey = (symbol: string): string => symbol.replace(/[^A-Za-z0-9]/g, '').toUpperCase();

/**
 * What `data count` says when it found nothing and no job of the venue collects the symbol as
 * typed (one line, on stderr, so `--json` stays one document): that nothing matches, and the
 * spelling the venue's jobs and streams use for it (`BTCUSDT` -> `BTC/USDT`), or, for Binance,
 * tickfleet's pair form by the quote suffix. Undefined when a job collects the symbol as typed.
 */
export async function noMatchHint(store: StateStore, venue: string, symbol: string): Promise<string | undefined> {
  const [jobs, streams] = await Promise.all([store.jobs.list({ venue }), store.streams.list({ venue })]);
  const known = new Set([...jobs.map((j) => j.symbol), ...streams.flatMap((s) => s.symbols)]);
  if (known.has(symbol)) return undefined;
  const likely = [...known].find((k) => spellingKey(k) === spellingKey(symbol)) ?? (await venueForm(venue, symbol));
  const suggestion = likely === undefined || likely === symbol ? '' : `; did you mean ${likely}?`;
  return `no job or stored data matches ${venue} ${symbol}${suggestion} (tickfleet jobs list --venue ${venue} shows what is collected)`;
}

/** The venue's own spelling in tickfleet's form, where tickfleet knows it; loads the adapters only on this path. */
async function venueForm(venue: string, symbol: string): Promise<string | undefined> {
  if (venue !== 'binance' || symbol.includes('/')) return undefined;
  const { binanceSymbolBySuffix } = await import('@tickfleet/venues');
  const pair = binanceSymbolBySuffix(symbol);
  return pair.includes('/') ? pair : undefined;
}
