/** One HTTP answer of an emulated venue, built before any latency or fault is applied. */
export interface Reply {
  status: number;
  headers: Record<string, string>;
  body: string | Buffer;
  /** Extra time before this answer is written, on top of the venue's latency (e.g. a slow listing endpoint). */
  delayMs?: number;
}

export function jsonReply(status: number, body: unknown, headers: Record<string, string> = {}): Reply {
  return { status, headers, body: typeof body === 'string' ? body : JSON.stringify(body) };
}

/** `Retry-After` in whole seconds, rounded up so a client never retries inside the window. */
export function retryAfterSeconds(ms: number): string {
  return String(Math.max(1, Math.ceil(ms / 1000)));
}

export type MalformedKind = 'truncated' | 'wrong-shape';

/**
 * A JSON reply spoiled the two ways real venues spoil them: cut off mid-document (a proxy dropping
 * the tail), or well-formed JSON of the wrong shape (an array where an object belongs and vice versa).
 */
export function malformJson(reply: Reply, kind: MalformedKind): Reply {
  const text = reply.body.toString();
  if (kind === 'truncated') return { ...reply, body: text.slice(0, Math.max(1, Math.floor(text.length / 2))) };
  // An emulation's body is a JSON document it built itself, so wrapping its text keeps it
  // well-formed (a 1,000-candle page is not parsed and serialised again).
  const first = text.trimStart()[0];
  if (first === '[') return { ...reply, body: `{"data":${text}}` };
  if (first === '{') return { ...reply, body: `[${text}]` };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = text;
  }
  return { ...reply, body: JSON.stringify([parsed]) };
}
