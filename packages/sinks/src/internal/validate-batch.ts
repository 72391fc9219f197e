import { ValidationError } from '@tickfleet/core';
import { keyEnvelope, type KeyedEnvelope } from '../records.js';
import type { RejectedRecord } from '../sink.js';

/** Splits a batch into valid keyed envelopes and rejected records (by index). */
export function validateBatch(records: readonly unknown[]): { valid: KeyedEnvelope[]; rejected: RejectedRecord[] } {
  const valid: KeyedEnvelope[] = [];
  const rejected: RejectedRecord[] = [];
  records.forEach((raw, index) => {
    try {
      valid.push(keyEnvelope(raw));
    } catch (err) {
      if (!(err instanceof ValidationError)) throw err;
      rejected.push({ index, error: err });
    }
  });
  return { valid, rejected };
}
