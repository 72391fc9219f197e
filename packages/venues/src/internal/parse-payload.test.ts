import { MalformedPayloadError } from '@tickfleet/core';
import { z } from 'zod';
import { bodyString, parseJsonBuffer, parsePayload } from './parse-payload.js';

/** A small seeded generator (mulberry32), so a failing case can be run again. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Strings that look like the cut points, so cuts land inside strings too. */
const TRICKY = ['],[', '},{', '"],["', '\\"],[', ']', '[', '{', '}', ',', 'é],[ü', '𝄞'];

function value(rand: () => number, depth: number): unknown {
  const r = rand();
  if (depth > 3 || r < 0.35) return rand() < 0.5 ? TRICKY[Math.floor(rand() * TRICKY.length)] : Math.round(rand() * 1e13) / 100;
  const n = Math.floor(rand() * 5);
  if (r < 0.7) return Array.from({ length: n }, () => value(rand, depth + 1));
  return Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}${TRICKY[i % TRICKY.length]}`, value(rand, depth + 1)]));
}

function rows(rand: () => number, n: number, kind: 'arrays' | 'objects' | 'mixed'): unknown[] {
  return Array.from({ length: n }, (_, i) => {
    const items = Array.from({ length: 1 + Math.floor(rand() * 4) }, () => value(rand, 1));
    const asObject = kind === 'objects' || (kind === 'mixed' && i % 2 === 1);
    return asObject ? Object.fromEntries(items.map((v, j) => [`f${j}`, v])) : items;
  });
}

describe('parseJsonBuffer', () => {
  it('gives JSON.parse’s value for arrays of arrays, of objects and of both, cut at every piece size (strings and nested rows holding the separators)', () => {
    const rand = rng(20261128);
    for (let round = 0; round < 60; round++) {
      const kind = (['arrays', 'objects', 'mixed'] as const)[round % 3]!;
      const text = JSON.stringify(rows(rand, 5 + Math.floor(rand() * 40), kind));
      const body = Buffer.from(text);
      for (const pieceBytes of [1, 2, 7, 31, 64, 200, 1000]) expect(parseJsonBuffer(body, pieceBytes)).toEqual(JSON.parse(text));
    }
  });

  it('a 1,000-kline page in pieces of the default size is the page', () => {
    const page = Array.from({ length: 1000 }, (_, i) => {
      const t = 1_700_000_000_000 + i * 60_000;
      return [
        t,
        '42000.12000000',
        '42010.50000000',
        '41990.01000000',
        '42005.00000000',
        '12.34567000',
        t + 59_999,
        '518234.12345678',
        321,
        '6.1',
        '256000.1',
        '0',
      ];
    });
    const body = Buffer.from(JSON.stringify(page));
    expect(body.length).toBeGreaterThan(128 * 1024);
    expect(parseJsonBuffer(body)).toEqual(page);
  });

  it('bodies that are not one JSON array give JSON.parse’s value or its SyntaxError', () => {
    const cases = [
      '[[1,2],[3,4]] trailing',
      '[[1,2],[3,4]',
      '[[1,"2],[3"],[4]]',
      '[[1,"2],[3],[4]]',
      '[[1,2]],[[3,4]]',
      '[{"a":1},{"b":2}]]',
      '[ [1,2] , [3,4] ]',
      '{"a":[[1],[2]]}',
      '[[1],[2],[3]]',
      '[1,2,3]',
      '"],["',
      '',
    ];
    for (const text of cases) {
      const body = Buffer.from(text);
      let expected: unknown;
      let expectedError: unknown;
      try {
        expected = JSON.parse(text);
      } catch (err) {
        expectedError = err;
      }
      for (const pieceBytes of [1, 3, 5, 100]) {
        if (expectedError) expect(() => parseJsonBuffer(body, pieceBytes)).toThrow((expectedError as Error).message);
        else expect(parseJsonBuffer(body, pieceBytes)).toEqual(expected);
      }
    }
  });
});

describe('bodyString', () => {
  it('is the body decoded as UTF-8, with characters of 2, 3 and 4 bytes cut by every piece boundary', () => {
    for (const char of ['é', '€', '𝄞']) {
      for (let shift = 0; shift < 4; shift++) {
        const body = Buffer.from('x'.repeat(64 * 1024 - shift) + char.repeat(40_000) + 'y');
        expect(bodyString(body)).toBe(body.toString('utf8'));
      }
    }
    expect(bodyString(Buffer.from('{"a":"é"}'))).toBe('{"a":"é"}');
  });
});

describe('parsePayload', () => {
  const Rows = z.array(z.tuple([z.number(), z.string()]));

  it('a large body that is not JSON is a MalformedPayloadError with a sample of the body', () => {
    const text = JSON.stringify(Array.from({ length: 20_000 }, (_, i) => [i, String(i)])).slice(0, -1);
    expect(text.length).toBeGreaterThan(128 * 1024);
    let err: unknown;
    try {
      parsePayload('binance', 'klines', Buffer.from(text), Rows);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(MalformedPayloadError);
    expect((err as MalformedPayloadError).message).toContain('klines response is not JSON');
    expect((err as MalformedPayloadError).sample.startsWith('[[0,"0"],[1,"1"]')).toBe(true);
  });

  it('a large body of the wrong shape names the first bad path', () => {
    const page: unknown[] = Array.from({ length: 20_000 }, (_, i) => [i, String(i)]);
    page[15_000] = [15_000, 15_000];
    expect(() => parsePayload('binance', 'klines', Buffer.from(JSON.stringify(page)), Rows)).toThrow(/klines response has an unexpected shape at 15000\.1/);
    expect(parsePayload('binance', 'klines', Buffer.from(JSON.stringify(page.slice(0, 15_000))), Rows)).toHaveLength(15_000);
  });
});
