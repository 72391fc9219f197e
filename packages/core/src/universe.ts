import { z } from 'zod';
import { ValidationError } from './errors/validation-error.js';
import { SymbolName, VenueName } from './names.js';

/**
 * Most symbols one universe may hold. A universe is read whole by every unit that covers it and
 * stored as one record (one SQLite row, one MongoDB document); 5,000 covers every US-listed
 * optionable equity (about 4,500) while keeping that record well under 100 KB.
 */
export const MAX_UNIVERSE_SYMBOLS = 5000;

/** A universe's name: lowercase, starts with a letter, e.g. `sp500`, `mega-caps`. */
export const UniverseName = z.string().regex(/^[a-z][a-z0-9_-]{0,63}$/, 'expected a universe name: 1-64 of [a-z0-9_-], starting with a letter (e.g. sp500)');
export type UniverseName = z.infer<typeof UniverseName>;

/** A named symbol list of one venue, stored as `<venue>/<name>`; jobs refer to it as `@<name>`. */
export const Universe = z.object({
  venue: VenueName,
  name: UniverseName,
  /** Distinct members in the order given. */
  symbols: z
    .array(SymbolName)
    .min(1, 'expected at least one symbol')
    .max(MAX_UNIVERSE_SYMBOLS, `expected at most ${MAX_UNIVERSE_SYMBOLS} symbols`)
    .refine((s) => new Set(s).size === s.length, 'expected distinct symbols'),
  createdAt: z.number().int().optional(),
  updatedAt: z.number().int().optional(),
});
export type Universe = z.infer<typeof Universe>;

/** A job symbol naming a universe instead of one instrument: `@sp500`. */
export const UniverseRef = z.string().regex(/^@[a-z][a-z0-9_-]{0,63}$/, 'expected a universe reference such as @sp500');

/** What a job's symbol may be: one instrument, or `@<name>` for every member of that universe. */
export const JobSymbol = z.union([SymbolName, UniverseRef], {
  error: () => 'expected a symbol such as BTC/USDT or AAPL, or a universe reference such as @sp500',
});

/** The universe name of a `@<name>` job symbol, or null for an instrument symbol. */
export function universeOf(symbol: string): string | null {
  return symbol.startsWith('@') ? symbol.slice(1) : null;
}

/** The store key of a universe, `<venue>/<name>`, as errors and listings show it. */
export function universeKey(venue: string, name: string): string {
  return `${venue}/${name}`;
}

/**
 * Distinct symbols in first-seen order, each validated; throws a ValidationError naming the first
 * bad symbol (with its position) or the bound. Duplicates are dropped, not refused: files pasted
 * from index lists often repeat a ticker.
 */
export function normalizeUniverseSymbols(symbols: readonly string[], field = 'symbols'): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  symbols.forEach((raw, i) => {
    const s = raw.trim();
    if (!SymbolName.safeParse(s).success) throw new ValidationError(`${field}[${i}]`, 'a symbol such as AAPL or BTC/USDT', raw);
    if (!seen.has(s)) {
      seen.add(s);
      out.push(s);
    }
  });
  if (out.length === 0) throw new ValidationError(field, 'at least one symbol');
  if (out.length > MAX_UNIVERSE_SYMBOLS)
    throw new ValidationError(field, `at most ${MAX_UNIVERSE_SYMBOLS} distinct symbols per universe`, `${out.length} symbols`);
  return out;
}
