import { type Document, EJSON } from 'bson';

/**
 * Value helpers over deserialized BSON (driver defaults: int32/int64/double promoted to JS
 * numbers; ObjectId, Binary, Decimal128, Timestamp, MinKey, MaxKey stay bson classes).
 */

type BsonTagged = { _bsontype?: string };

function bsonType(value: unknown): string | undefined {
  return value !== null && typeof value === 'object' ? (value as BsonTagged)._bsontype : undefined;
}

/**
 * MongoDB's cross-type comparison order (docs: "Comparison/Sort Order"): MinKey, null and
 * missing, numbers, strings and symbols, objects, arrays, BinData, ObjectId, booleans, dates,
 * timestamps, regular expressions, MaxKey.
 */
export function typeRank(value: unknown): number {
  if (value === undefined || value === null) return 2;
  switch (typeof value) {
    case 'number':
    case 'bigint':
      return 3;
    case 'string':
      return 4;
    case 'boolean':
      return 9;
    default:
  }
  if (value instanceof Date) return 10;
  if (value instanceof RegExp) return 12;
  if (Array.isArray(value)) return 6;
  if (ArrayBuffer.isView(value)) return 7;
  switch (bsonType(value)) {
    case 'MinKey':
      return 1;
    case 'Long':
    case 'Int32':
    case 'Double':
    case 'Decimal128':
      return 3;
    case 'BSONSymbol':
      return 4;
    case 'Binary':
      return 7;
    case 'ObjectId':
      return 8;
    case 'Timestamp':
      return 11;
    case 'BSONRegExp':
      return 12;
    case 'MaxKey':
      return 13;
    case undefined:
      return 5;
    default:
      return 14;
  }
}

function toNumber(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number(value);
  const tagged = value as { toNumber?: () => number; valueOf(): unknown; toString(): string };
  if (bsonType(value) === 'Decimal128') return Number.parseFloat(tagged.toString());
  if (typeof tagged.toNumber === 'function') return tagged.toNumber();
  return Number(tagged.valueOf());
}

function cmp<T>(a: T, b: T): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function bytesOf(value: unknown): Uint8Array {
  if (bsonType(value) === 'Binary') return (value as { buffer: Uint8Array }).buffer;
  const view = value as ArrayBufferView;
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
}

/** Total order over BSON values following MongoDB's comparison rules. */
export function compareValues(a: unknown, b: unknown): number {
  const ra = typeRank(a);
  const rb = typeRank(b);
  if (ra !== rb) return cmp(ra, rb);
  switch (ra) {
    case 1:
    case 2:
    case 13:
      return 0;
    case 3: {
      const na = toNumber(a);
      const nb = toNumber(b);
      if (Number.isNaN(na) || Number.isNaN(nb)) return cmp(Number.isNaN(na) ? 0 : 1, Number.isNaN(nb) ? 0 : 1);
      return cmp(na, nb);
    }
    case 4:
      return cmp(String(a), String(b));
    case 5: {
      const ea = Object.entries(a as Document);
      const eb = Object.entries(b as Document);
      for (let i = 0; i < Math.min(ea.length, eb.length); i++) {
        const [ka, va] = ea[i] as [string, unknown];
        const [kb, vb] = eb[i] as [string, unknown];
        const byType = cmp(typeRank(va), typeRank(vb));
        if (byType !== 0) return byType;
        const byName = cmp(ka, kb);
        if (byName !== 0) return byName;
        const byValue = compareValues(va, vb);
        if (byValue !== 0) return byValue;
      }
      return cmp(ea.length, eb.length);
    }
    case 6: {
      const xa = a as unknown[];
      const xb = b as unknown[];
      for (let i = 0; i < Math.min(xa.length, xb.length); i++) {
        const c = compareValues(xa[i], xb[i]);
        if (c !== 0) return c;
      }
      return cmp(xa.length, xb.length);
    }
    case 7: {
      const ba = bytesOf(a);
      const bb = bytesOf(b);
      if (ba.length !== bb.length) return cmp(ba.length, bb.length);
      for (let i = 0; i < ba.length; i++) {
        const c = cmp(ba[i] as number, bb[i] as number);
        if (c !== 0) return c;
      }
      return 0;
    }
    case 8:
      return cmp(String(a), String(b));
    case 9:
      return cmp(Number(a), Number(b));
    case 10:
      return cmp((a as Date).getTime(), (b as Date).getTime());
    case 11: {
      const ta = a as { high: number; low: number };
      const tb = b as { high: number; low: number };
      return cmp(ta.high, tb.high) || cmp(ta.low >>> 0, tb.low >>> 0);
    }
    default:
      return cmp(String(a), String(b));
  }
}

/**
 * A string that is equal for two values exactly when MongoDB considers them equal (numbers
 * across int/long/double compare by value; embedded documents by field order and values).
 * Used for `_id` identity and unique-index keys.
 */
export function canonicalKey(value: unknown): string {
  if (value === undefined || value === null) return 'null';
  switch (typeof value) {
    case 'number':
      return `n:${Object.is(value, -0) ? 0 : value}`;
    case 'bigint':
      return `n:${value}`;
    case 'string':
      return `s:${JSON.stringify(value)}`;
    case 'boolean':
      return `b:${value}`;
    default:
  }
  if (value instanceof Date) return `d:${value.getTime()}`;
  if (value instanceof RegExp) return `r:/${value.source}/${value.flags}`;
  if (Array.isArray(value)) return `[${value.map(canonicalKey).join(',')}]`;
  switch (bsonType(value)) {
    case 'Long':
    case 'Int32':
    case 'Double':
    case 'Decimal128':
      return `n:${toNumber(value)}`;
    case 'ObjectId':
      return `o:${String(value)}`;
    case 'Binary':
      return `x:${(value as { sub_type: number }).sub_type}:${Buffer.from(bytesOf(value)).toString('base64')}`;
    case undefined: {
      const parts = Object.entries(value as Document).map(([k, v]) => `${JSON.stringify(k)}:${canonicalKey(v)}`);
      return `{${parts.join(',')}}`;
    }
    default:
      return `e:${EJSON.stringify(value as Document, { relaxed: false })}`;
  }
}

/** Deep copy of plain objects, arrays and dates; bson value classes are immutable and shared. */
export function cloneDeep<T>(value: T): T {
  if (value === null || typeof value !== 'object') return value;
  if (value instanceof Date) return new Date(value.getTime()) as T;
  if (Array.isArray(value)) return value.map((v) => cloneDeep(v)) as T;
  if (bsonType(value) !== undefined || ArrayBuffer.isView(value) || value instanceof RegExp) return value;
  const out: Document = {};
  for (const [k, v] of Object.entries(value as Document)) out[k] = cloneDeep(v);
  return out as T;
}

/** True for a plain embedded document (not an array, date or bson value class). */
export function isPlainDocument(value: unknown): value is Document {
  return (
    value !== null &&
    typeof value === 'object' &&
    !Array.isArray(value) &&
    !(value instanceof Date) &&
    !(value instanceof RegExp) &&
    !ArrayBuffer.isView(value) &&
    bsonType(value) === undefined
  );
}

/**
 * Values a dotted path reaches, descending through arrays the way index keys and `distinct`
 * do: `a.b` over `{a: [{b: 1}, {b: 2}]}` reaches 1 and 2. An empty list means missing.
 */
export function valuesAtPath(doc: unknown, path: string): unknown[] {
  const parts = path.split('.');
  let current: unknown[] = [doc];
  for (const part of parts) {
    const next: unknown[] = [];
    for (const value of current) {
      if (Array.isArray(value)) {
        if (/^\d+$/.test(part) && Number(part) < value.length) next.push(value[Number(part)]);
        else for (const el of value) if (isPlainDocument(el) && part in el) next.push(el[part]);
      } else if (isPlainDocument(value) && part in value) {
        next.push(value[part]);
      }
    }
    current = next;
  }
  return current;
}

/** Sets a dotted path, creating embedded documents on the way (used to seed upserts). */
export function setAtPath(doc: Document, path: string, value: unknown): void {
  const parts = path.split('.');
  let current: Document = doc;
  for (let i = 0; i < parts.length - 1; i++) {
    const part = parts[i] as string;
    const next = current[part];
    if (!isPlainDocument(next)) current[part] = {};
    current = current[part] as Document;
  }
  current[parts[parts.length - 1] as string] = value;
}

/** Shell-like rendering used in E11000 messages: `{ sym: "BTC", t: 1 }`. */
export function formatValue(value: unknown): string {
  if (value === undefined || value === null) return 'null';
  if (typeof value === 'string') return JSON.stringify(value);
  if (value instanceof Date) return `new Date(${value.getTime()})`;
  if (Array.isArray(value)) return `[ ${value.map(formatValue).join(', ')} ]`;
  if (bsonType(value) === 'ObjectId') return `ObjectId('${String(value)}')`;
  if (isPlainDocument(value)) {
    const parts = Object.entries(value).map(([k, v]) => `${k}: ${formatValue(v)}`);
    return parts.length === 0 ? '{}' : `{ ${parts.join(', ')} }`;
  }
  return String(value);
}
