import { decimalDigits, hexDigits, roundTo, unitFloat } from './random.js';

/** Markets the Polymarket emulation lists when the scenario does not say. */
export const DEFAULT_POLYMARKET_MARKETS = 20;

/** A Gamma API market, as `GET /markets` returns it (token ids and outcomes are JSON-encoded strings). */
export interface PolymarketMarket {
  id: string;
  question: string;
  conditionId: string;
  slug: string;
  endDate: string;
  liquidity: string;
  volume: string;
  active: boolean;
  closed: boolean;
  outcomes: string;
  clobTokenIds: string;
  enableOrderBook: boolean;
}

const SUBJECTS = ['BTC', 'ETH', 'SOL', 'the S&P 500', 'gold', 'the Fed funds rate', 'US CPI', 'Nvidia'];
const VERBS = ['close above', 'trade below', 'reach', 'end the month above'];

/**
 * The `count` markets of the emulated Gamma API for `seed`, in id order. Every fifth market is
 * closed (so `closed=false` filtering is observable); each has two outcome tokens (Yes, No) whose
 * 77-digit ids are the symbols of the order-book venue.
 */
export function polymarketMarkets(seed: number, count = DEFAULT_POLYMARKET_MARKETS): PolymarketMarket[] {
  const out: PolymarketMarket[] = [];
  for (let i = 0; i < count; i++) {
    const subject = SUBJECTS[Math.floor(unitFloat('pm-s', i, seed) * SUBJECTS.length)] ?? 'BTC';
    const verb = VERBS[Math.floor(unitFloat('pm-v', i, seed) * VERBS.length)] ?? 'reach';
    const level = 10 * (1 + Math.floor(unitFloat('pm-l', i, seed) * 1000));
    const question = `Will ${subject} ${verb} ${level} by December 31?`;
    const yes = decimalDigits(77, 'pm-yes', i, seed);
    const no = decimalDigits(77, 'pm-no', i, seed);
    const closed = i % 5 === 4;
    out.push({
      id: String(500_000 + i),
      question,
      conditionId: `0x${hexDigits(64, 'pm-cond', i, seed)}`,
      slug: `${question
        .toLowerCase()
        .replace(/[^a-z0-9]+/g, '-')
        .replace(/^-|-$/g, '')}-${i}`,
      endDate: '2026-12-31T12:00:00Z',
      liquidity: String(roundTo(1000 + 100_000 * unitFloat('pm-liq', i, seed), 4)),
      volume: String(roundTo(10_000 + 5_000_000 * unitFloat('pm-vol', i, seed), 4)),
      active: true,
      closed,
      outcomes: JSON.stringify(['Yes', 'No']).replace(',', ', '),
      clobTokenIds: JSON.stringify([yes, no]).replace(',', ', '),
      enableOrderBook: true,
    });
  }
  return out;
}

/** The outcome token ids of a market (parsed from its JSON-encoded `clobTokenIds`). */
export function marketTokenIds(market: PolymarketMarket): string[] {
  return JSON.parse(market.clobTokenIds) as string[];
}
