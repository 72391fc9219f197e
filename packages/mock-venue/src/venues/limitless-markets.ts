import { decimalDigits, hexDigits, unitFloat } from '../data/random.js';

/** Markets the Limitless emulation lists when the scenario does not say. */
export const DEFAULT_LIMITLESS_MARKETS = 12;

const DAY_MS = 86_400_000;
/** Expirations start here, one day apart, so every emulated market stays active. */
const FIRST_EXPIRY_MS = Date.UTC(2030, 0, 1, 12);

/**
 * A market of the emulated `GET /markets/active`: every field the official SDK's `Market` type
 * requires (`@limitless-exchange/sdk` 1.1, types in SDK form: numbers where it says number), plus the
 * CLOB fields tickfleet reads.
 */
export interface LimitlessMarket {
  id: number;
  slug: string;
  title: string;
  proxyTitle: string | null;
  collateralToken: { address: string; decimals: number; symbol: string };
  expirationDate: string;
  expirationTimestamp: number;
  expired: boolean;
  createdAt: string;
  updatedAt: string;
  status: 'FUNDED';
  categories: string[];
  creator: { name: string; imageURI: string; link: string };
  tags: string[];
  tradeType: 'clob' | 'amm';
  marketType: 'single' | 'group';
  priorityIndex: number;
  metadata: { fee: boolean; isBannered: boolean };
  conditionId?: string;
  tokens?: { yes: string; no: string };
  /** Child markets of a group market, each a CLOB market with its own book. */
  markets?: LimitlessMarket[];
}

const SUBJECTS = ['btc', 'eth', 'sol', 'doge', 'gold', 'nvda'];
/** USDC on Base, the collateral of Limitless markets (as a real market body quoted by CCXT's Limitless client shows). */
const USDC = Object.freeze({ address: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', decimals: 6, symbol: 'USDC' });
const CREATOR = Object.freeze({ name: 'Limitless', imageURI: 'https://limitless.exchange/assets/images/logo.svg', link: 'https://x.com/trylimitless' });
/** Markets are created this long before they expire, and last updated an hour later. */
const LISTED_FOR_MS = 30 * DAY_MS;

/**
 * The `count` top-level markets of the emulated venue for `seed`, in id order: mostly CLOB
 * single markets; every sixth (i % 6 === 3) an AMM market without an order book; every sixth
 * (i % 6 === 5) a group market of two CLOB children. Slugs are unique lowercase words and digits.
 */
export function limitlessMarkets(seed: number, count = DEFAULT_LIMITLESS_MARKETS): LimitlessMarket[] {
  const out: LimitlessMarket[] = [];
  for (let i = 0; i < count; i++) {
    const subject = SUBJECTS[Math.floor(unitFloat('ll-s', i, seed) * SUBJECTS.length)] ?? 'btc';
    const level = 10 * (1 + Math.floor(unitFloat('ll-l', i, seed) * 10_000));
    const expirationTimestamp = FIRST_EXPIRY_MS + i * DAY_MS;
    const expirationDate = new Date(expirationTimestamp).toLocaleDateString('en-US', { month: 'short', day: 'numeric', year: 'numeric', timeZone: 'UTC' });
    const createdMs = expirationTimestamp - LISTED_FOR_MS;
    const base = {
      id: 7000 + i * 10,
      proxyTitle: null,
      collateralToken: { ...USDC },
      expirationDate,
      expirationTimestamp,
      expired: false,
      createdAt: new Date(createdMs).toISOString(),
      updatedAt: new Date(createdMs + 3_600_000).toISOString(),
      status: 'FUNDED' as const,
      categories: ['Crypto'],
      creator: { ...CREATOR },
      tags: [subject.toUpperCase()],
      priorityIndex: 0,
      metadata: { fee: true, isBannered: false },
    };
    if (i % 6 === 5) {
      const slug = `${subject}-range-on-expiry-${expirationTimestamp}`;
      const children = ['below', 'above'].map((side, k) =>
        clob(seed, i, k + 1, { ...base, id: base.id + k + 1 }, `${subject}-${side}-${level}-${expirationTimestamp}`, `${side} ${level}`),
      );
      out.push({ ...base, slug, title: `${subject.toUpperCase()} range on expiry?`, tradeType: 'clob', marketType: 'group', markets: children });
    } else if (i % 6 === 3) {
      out.push({
        ...base,
        slug: `will-${subject}-reach-${level}-${i}`,
        title: `Will ${subject.toUpperCase()} reach ${level}?`,
        tradeType: 'amm',
        marketType: 'single',
      });
    } else {
      out.push(clob(seed, i, 0, base, `${subject}-above-${level}-on-${expirationTimestamp}`, `${subject.toUpperCase()} above ${level}?`));
    }
  }
  return out;
}

function clob(
  seed: number,
  i: number,
  k: number,
  base: Omit<LimitlessMarket, 'slug' | 'title' | 'tradeType' | 'marketType'>,
  slug: string,
  title: string,
): LimitlessMarket {
  return {
    ...base,
    slug,
    title,
    tradeType: 'clob',
    marketType: 'single',
    conditionId: `0x${hexDigits(64, 'll-cond', i, k, seed)}`,
    tokens: { yes: decimalDigits(77, 'll-yes', i, k, seed), no: decimalDigits(77, 'll-no', i, k, seed) },
  };
}

/** The slugs that have an order book: CLOB single markets and the children of group markets. */
export function limitlessBookSlugs(markets: readonly LimitlessMarket[]): string[] {
  return markets.flatMap((m) => (m.marketType === 'group' ? (m.markets ?? []).map((c) => c.slug) : m.tradeType === 'clob' ? [m.slug] : []));
}
