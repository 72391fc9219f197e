/** The parts of a venue error body tickfleet reads; every venue spells them a little differently. */
export interface VenueErrorBody {
  code?: string | number;
  message?: string;
}

/**
 * Reads `{"code":-1003,"msg":"…"}` (Binance), `{"status":"ERROR","error":"…"}` (Polygon) and
 * `{"error":"…"}` (Polymarket) and NestJS's `{"statusCode":404,"message":"…","error":"Not Found"}`
 * (Limitless, whose `error` is only the status phrase and `message` may be a list) and FRED's
 * `{"error_code":400,"error_message":"…"}`. Returns `{}` for anything else, including non-JSON bodies: an error
 * body must never turn into a crash.
 */
export function parseVenueErrorBody(text: string): VenueErrorBody {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    const trimmed = text.trim();
    return trimmed ? { message: trimmed.slice(0, 200) } : {};
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return {};
  const obj = value as Record<string, unknown>;
  const out: VenueErrorBody = {};
  if (typeof obj.code === 'number' || typeof obj.code === 'string') out.code = obj.code;
  // FRED: {"error_code":400,"error_message":"Bad Request.  …"}
  if (typeof obj.error_code === 'number' && typeof obj.error_message === 'string') return { code: obj.error_code, message: obj.error_message };
  const nest = typeof obj.statusCode === 'number' && (typeof obj.message === 'string' || Array.isArray(obj.message));
  const msg = nest ? (Array.isArray(obj.message) ? obj.message.map(String).join('; ') : obj.message) : (obj.msg ?? obj.error ?? obj.message);
  if (typeof msg === 'string') out.message = msg;
  return out;
}

/** Binance 418 bodies say `IP(1.2.3.4) banned until 1700000000000`; returns that epoch ms. */
export function parseBannedUntilMs(message: string | undefined): number | undefined {
  if (!message) return undefined;
  const m = /banned until (\d{10,})/i.exec(message);
  if (!m) return undefined;
  const ms = Number(m[1]);
  return Number.isSafeInteger(ms) ? ms : undefined;
}

/** `Retry-After` as milliseconds to wait: delta-seconds or an HTTP date (RFC 9110 10.2.3). */
export function parseRetryAfterMs(header: string | null, nowMs: number): number | undefined {
  if (header === null) return undefined;
  const text = header.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const at = Date.parse(text);
  return Number.isFinite(at) ? Math.max(0, at - nowMs) : undefined;
}
