/**
 * Stateless pseudo-randomness: every value is a hash of its inputs, so emulated data is a pure
 * function of (venue, symbol, time, seed) and a test can recompute exactly what the emulation served.
 * FNV-1a over the parts, then murmur3's fmix32 finaliser to spread the low-entropy tails of
 * timestamps across all 32 bits.
 */
export function hash32(...parts: ReadonlyArray<string | number>): number {
  return finishHash(absorb(HASH_START, ...parts));
}

/** The FNV-1a state before any part: `finishHash(absorb(HASH_START, ...parts))` is `hash32(...parts)`. */
export const HASH_START = 0x811c9dc5;

// Module bindings, not globals: inside a vm context (jest) every global lookup in a hot loop goes
// through the context's interceptor (hash32 once ran 23x slower there for it).
const imul = Math.imul;
const round = Math.round;

/**
 * The FNV-1a state `h` after `parts`, each followed by a separator (so ("ab","c") and ("a","bc")
 * differ). Hashes sharing leading parts (a series' venue, symbol and seed) absorb them once.
 */
export function absorb(h: number, ...parts: ReadonlyArray<string | number>): number {
  for (let p = 0; p < parts.length; p++) {
    const s = `${parts[p]}`;
    for (let i = 0; i < s.length; i++) {
      h ^= s.charCodeAt(i);
      h = imul(h, 0x01000193);
    }
    h ^= 0x1f;
    h = imul(h, 0x01000193);
  }
  return h;
}

/** The hash of an FNV-1a state (murmur3's fmix32), as an unsigned 32-bit number. */
export function finishHash(h: number): number {
  h ^= h >>> 16;
  h = imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** The number in [0, 1) of a state: `unitFloatOf(absorb(HASH_START, ...parts))` is `unitFloat(...parts)`. */
export function unitFloatOf(h: number): number {
  return finishHash(h) / 4294967296;
}

/** A deterministic number in [0, 1) derived from `parts`. */
export function unitFloat(...parts: ReadonlyArray<string | number>): number {
  return unitFloatOf(absorb(HASH_START, ...parts));
}

/** `digits` decimal digits derived from `parts` (first digit non-zero). */
export function decimalDigits(digits: number, ...parts: ReadonlyArray<string | number>): string {
  let out = '';
  let i = 0;
  while (out.length < digits) {
    out += String(hash32(...parts, i++))
      .padStart(10, '0')
      .slice(1);
  }
  out = out.slice(0, digits);
  return out[0] === '0' ? `1${out.slice(1)}` : out;
}

/** `chars` lowercase hex characters derived from `parts`. */
export function hexDigits(chars: number, ...parts: ReadonlyArray<string | number>): string {
  let out = '';
  let i = 0;
  while (out.length < chars)
    out += hash32(...parts, i++)
      .toString(16)
      .padStart(8, '0');
  return out.slice(0, chars);
}

/** Rounds to `decimals` places (half away from zero), avoiding binary drift in the printed result. */
export function roundTo(value: number, decimals: number): number {
  const f = 10 ** decimals;
  return round(value * f) / f;
}
