import { priceAt } from './candles.js';
import { decimalDigits, roundTo, unitFloat } from './random.js';

/** Deutsche Börse post-trade sources: the file prefix code and what its records carry. */
export const XETRA_SOURCES = {
  DETR: { sourceName: 'ETR', executionVenueId: 'XETA' },
  DFRA: { sourceName: 'FRA', executionVenueId: 'XFRA' },
  DGAT: { sourceName: 'GAT', executionVenueId: 'XGAT' },
  DEUR: { sourceName: 'EUR', executionVenueId: 'XEUR' },
} as const;
export type XetraSource = keyof typeof XETRA_SOURCES;

export function isXetraSource(code: string): code is XetraSource {
  return Object.prototype.hasOwnProperty.call(XETRA_SOURCES, code);
}

/** Instruments traded in the emulated files when the scenario does not name its own ISINs. */
export const DEFAULT_XETRA_ISINS: readonly string[] = [
  'DE0007100000',
  'DE0007164600',
  'DE0005140008',
  'DE0007236101',
  'DE000BASF111',
  'DE0008404005',
  'DE0005557508',
  'DE0007664039',
  'DE000BAY0017',
  'DE0005190003',
];

/**
 * One post-trade record of the Deutsche Börse public data files (MiFIR post-trade transparency),
 * field names and order as in the real `DETR-posttrade-*.json` files.
 */
export interface XetraPostTrade {
  messageId: 'posttrade';
  sourceName: string;
  isin: string;
  currency: string;
  tickActionIndicator: string;
  instrumentIdCode: string;
  mmtMarketMechanism: string;
  mmtTradingMode: string;
  mmtNegotTransPretrdWaivInd: string;
  mmtModificationInd: string;
  mmtBenchmarkRefprcInd: string;
  mmtPubModeDefReason: string;
  mmtAlgoInd: string;
  quotationType: number;
  lastQty: number;
  lastTrade: number;
  /** ISO-8601 with nanoseconds, e.g. `2025-10-31T13:54:00.042457058Z`. */
  lastTradeTime: string;
  distributionDateTime: string;
  tickId: number;
  instrumentId: string;
  transIdCode: string;
  executionVenueId: string;
}

const MINUTE_MS = 60_000;

/** `DETR-posttrade-2024-01-15T08_00.json.gz` for the minute starting at `minuteMs` (UTC). */
export function xetraFileName(source: XetraSource, minuteMs: number): string {
  const iso = new Date(Math.floor(minuteMs / MINUTE_MS) * MINUTE_MS).toISOString();
  return `${source}-posttrade-${iso.slice(0, 10)}T${iso.slice(11, 13)}_${iso.slice(14, 16)}.json.gz`;
}

/** Inverse of xetraFileName; undefined for anything that is not a post-trade file name. */
export function parseXetraFileName(fileName: string): { source: XetraSource; minuteMs: number } | undefined {
  const m = /^([A-Z]{4})-posttrade-(\d{4}-\d{2}-\d{2})T(\d{2})_(\d{2})\.json\.gz$/.exec(fileName);
  if (!m || !isXetraSource(m[1] ?? '')) return undefined;
  const minuteMs = Date.parse(`${m[2]}T${m[3]}:${m[4]}:00Z`);
  if (!Number.isFinite(minuteMs)) return undefined;
  return { source: m[1] as XetraSource, minuteMs };
}

/** The trades of one minute on `source`, ascending by trade time; empty minutes have no file. */
export function tradesInMinute(source: XetraSource, minuteMs: number, seed: number, isins: readonly string[] = DEFAULT_XETRA_ISINS): XetraPostTrade[] {
  const { sourceName, executionVenueId } = XETRA_SOURCES[source];
  const raw: Array<{ isin: string; offsetNs: number; k: number }> = [];
  for (const isin of isins) {
    const n = tradesPerInstrument(source, isin, minuteMs, seed);
    for (let k = 0; k < n; k++) {
      raw.push({ isin, k, offsetNs: Math.floor(unitFloat('xt-t', source, isin, minuteMs, seed, k) * 60e9) });
    }
  }
  raw.sort((a, b) => a.offsetNs - b.offsetNs || (a.isin < b.isin ? -1 : a.isin > b.isin ? 1 : a.k - b.k));
  const minuteIndex = Math.floor(minuteMs / MINUTE_MS);
  return raw.map(({ isin, k, offsetNs }, i) => {
    const price = roundTo(priceAt('xetra', isin, minuteMs + Math.floor(offsetNs / 1e6), seed), 2);
    const qty = 1 + Math.floor(unitFloat('xt-q', source, isin, minuteMs, seed, k) * 500);
    const distributionNs = offsetNs + 1_000_000 + Math.floor(unitFloat('xt-d', source, isin, minuteMs, seed, k) * 20e6);
    return {
      messageId: 'posttrade',
      sourceName,
      isin,
      currency: 'EUR',
      tickActionIndicator: 'I',
      instrumentIdCode: 'I',
      mmtMarketMechanism: '8',
      mmtTradingMode: '2',
      mmtNegotTransPretrdWaivInd: '-',
      mmtModificationInd: '-',
      mmtBenchmarkRefprcInd: '-',
      mmtPubModeDefReason: '-',
      mmtAlgoInd: unitFloat('xt-algo', source, isin, minuteMs, seed, k) < 0.6 ? 'H' : '-',
      quotationType: 1,
      lastQty: qty,
      lastTrade: price,
      lastTradeTime: isoNanos(minuteMs, offsetNs),
      distributionDateTime: isoNanos(minuteMs, distributionNs),
      tickId: minuteIndex * 1000 + i,
      instrumentId: isin,
      transIdCode: decimalDigits(52, 'xt-id', source, isin, minuteMs, seed, k),
      executionVenueId,
    };
  });
}

/** The records of a post-trade file, or undefined when no such file exists (bad name or no trades). */
export function tradesInFile(fileName: string, seed: number, isins: readonly string[] = DEFAULT_XETRA_ISINS): XetraPostTrade[] | undefined {
  const parsed = parseXetraFileName(fileName);
  if (!parsed) return undefined;
  const trades = tradesInMinute(parsed.source, parsed.minuteMs, seed, isins);
  return trades.length > 0 ? trades : undefined;
}

/** Names of the files `source` publishes for closed minutes in `[fromMs, toMs)`, oldest first. */
export function xetraFilesBetween(source: XetraSource, fromMs: number, toMs: number, seed: number, isins: readonly string[] = DEFAULT_XETRA_ISINS): string[] {
  const out: string[] = [];
  let t = Math.ceil(fromMs / MINUTE_MS) * MINUTE_MS;
  for (; t < toMs; t += MINUTE_MS) {
    if (minuteHasTrades(source, t, seed, isins)) out.push(xetraFileName(source, t));
  }
  return out;
}

/** Whether `source` has a file for the minute at `minuteMs` (cheaper than generating its trades). */
export function minuteHasTrades(source: XetraSource, minuteMs: number, seed: number, isins: readonly string[] = DEFAULT_XETRA_ISINS): boolean {
  return isins.some((isin) => tradesPerInstrument(source, isin, minuteMs, seed) > 0);
}

// 0..2 trades per instrument per minute, so a few minutes in a day have no trades at all
function tradesPerInstrument(source: XetraSource, isin: string, minuteMs: number, seed: number): number {
  return Math.max(0, Math.floor(unitFloat('xt-n', source, isin, minuteMs, seed) * 5) - 2);
}

/** `2025-10-31T13:54:00.042457058Z`: the minute plus a nanosecond offset (< 60 s). */
function isoNanos(minuteMs: number, offsetNs: number): string {
  const wholeMs = minuteMs + Math.floor(offsetNs / 1e6);
  const iso = new Date(wholeMs).toISOString();
  const nanos = String(Math.floor(offsetNs % 1e9)).padStart(9, '0');
  return `${iso.slice(0, 19)}.${nanos}Z`;
}
