import { Binary, Decimal128, Long, MaxKey, MinKey, ObjectId, Timestamp } from 'bson';
import { canonicalKey, compareValues, valuesAtPath } from './bson-values.js';

describe('compareValues', () => {
  it('orders across types as MongoDB documents', () => {
    const oid = new ObjectId();
    const ordered = [
      new MinKey(),
      null,
      -1,
      Long.fromNumber(2),
      'a',
      { a: 1 },
      [1],
      new Binary(Buffer.from([1])),
      oid,
      false,
      true,
      new Date(0),
      new Timestamp({ t: 1, i: 0 }),
      /x/,
      new MaxKey(),
    ];
    const shuffled = [...ordered].reverse();
    expect(shuffled.sort(compareValues)).toEqual(ordered);
  });

  it('compares numbers by value across int64, double and decimal', () => {
    expect(compareValues(Long.fromNumber(3), 3)).toBe(0);
    expect(compareValues(Decimal128.fromString('2.5'), 3)).toBe(-1);
    expect(compareValues(null, undefined)).toBe(0);
  });

  it('compares embedded documents field by field, then by length', () => {
    expect(compareValues({ a: 1 }, { a: 1, b: 0 })).toBe(-1);
    expect(compareValues({ a: 2 }, { a: 1, b: 0 })).toBe(1);
    expect(compareValues({ a: 1 }, { b: 1 })).toBe(-1);
  });
});

describe('canonicalKey', () => {
  it('equates values MongoDB equates and separates the rest', () => {
    expect(canonicalKey(Long.fromNumber(7))).toBe(canonicalKey(7));
    expect(canonicalKey(-0)).toBe(canonicalKey(0));
    expect(canonicalKey('1')).not.toBe(canonicalKey(1));
    expect(canonicalKey({ a: 1, b: 2 })).not.toBe(canonicalKey({ b: 2, a: 1 }));
    const oid = new ObjectId();
    expect(canonicalKey(new ObjectId(oid.toHexString()))).toBe(canonicalKey(oid));
    expect(canonicalKey(new Date(5))).not.toBe(canonicalKey(5));
  });
});

describe('valuesAtPath', () => {
  it('descends through arrays of documents', () => {
    expect(valuesAtPath({ a: [{ b: 1 }, { b: 2 }, { c: 3 }] }, 'a.b')).toEqual([1, 2]);
    expect(valuesAtPath({ a: [10, 20] }, 'a.1')).toEqual([20]);
    expect(valuesAtPath({ a: 1 }, 'b')).toEqual([]);
  });
});
