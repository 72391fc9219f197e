import { createHash } from 'node:crypto';
import {
  bookLoopKey,
  type BookLoopReport,
  BudgetExhaustedError,
  type BookLoopSettings,
  type Clock,
  type Envelope,
  jobId,
  NotFoundError,
} from '@tickfleet/core';
import { jitteredBackoffMs, type FleetVenueControl } from '@tickfleet/budget';
import type { RedisClient } from '@tickfleet/queues';
import type { Pipeline } from '@tickfleet/sinks';
import type { StateStore } from '@tickfleet/store';
import { rateLimitedLog, type Logger } from '@tickfleet/telemetry';
import { isBatchBookSource, isBookSource, type BookBatch, type VenueAdapter, VenueRejectedError } from '@tickfleet/venues';
import type { ActiveSets } from './active-set.js';
import { WORKER_DEFAULTS } from './worker-defaults.js';

/** The share (0 … shares-1) an instrument belongs to: FNV-1a of its symbol, so every worker agrees without asking. */
export function bookShareOf(symbol: string, shares: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < symbol.length; i++) {
    h ^= symbol.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % shares;
}

/** The lease name of one share of a venue's loop, and back. */
export function bookShareName(venue: string, share: number): string {
  return `${venue}/${share}`;
}

export function parseBookShareName(name: string): { venue: string; share: number } | null {
  const m = /^([a-z0-9_-]+)\/(\d+)$/.exec(name);
  return m ? { venue: m[1]!, share: Number(m[2]) } : null;
}

/** What the loop needs from its venue runner: the budgeted adapter, the AIMD value and where outcomes go. */
export interface BookLoopHost {
  adapter(): VenueAdapter;
  /** The venue's in-flight limit now (the fleet-wide AIMD value within the cap): batches in flight at once. */
  inflightLimit(): number;
  /** One instrument's poll, for poll statistics (`err` absent: it succeeded). */
  notePoll(symbol: string, latencyMs: number, err?: unknown): void;
  /** One venue request of the loop ended: AIMD, the cooldown window, and a 429's freeze. */
  noteRequest(latencyMs: number, err?: unknown): Promise<void>;
}

export interface BookLoopOptions {
  venue: string;
  settings: BookLoopSettings;
  host: BookLoopHost;
  isHeld(name: string, token: number): boolean;
  redis: RedisClient;
  prefix: string;
  control: FleetVenueControl;
  activeSets: ActiveSets;
  pipeline: Pipeline;
  store: StateStore;
  clock: Clock;
  logger: Logger;
  workerId: string;
  backoff: { baseMs?: number; maxMs?: number };
  /** How long the last-stored markers outlive the loop's last write. @defaultValue {@link WORKER_DEFAULTS.bookLoopLastStoredTtlMs} */
  lastStoredTtlMs?: number;
}

/** A pass begun this much after it was due counts as an overrun of the previous one. */
const OVERRUN_SLACK_MS = 50;

interface HeldShare {
  token: number;
  /** Polled from passes that begin at or after this: a cadence after it was acquired, so it is never polled twice within a cadence by two holders. */
  fromMs: number;
  /** The share's last-stored markers were read from Redis (at its first cycle): the previous holder's view, not this worker's older one. */
  loaded: boolean;
}

interface Seen {
  /** Digest of the last stored book's levels. */
  digest: string;
  /** When the venue last answered this book (stored or unchanged). */
  seenAtMs: number;
  /** Polls since the stored one that came back unchanged. */
  unchanged: number;
}

/**
 * A venue's order books polled by a loop under leases instead of one queued unit per poll: this
 * worker polls the instruments of the shares it holds (a share: the active instruments whose
 * symbol hashes to it) once per cycle of `cadenceMs` (passes begin at least a cadence apart), in
 * batches of the venue's maximum per request, at most the venue's AIMD in-flight value of them at
 * once, each request spending its weight from the venue's budget. A share taken over is first
 * polled a cadence after it was acquired, and each batch checks its leases first: no instrument is
 * polled twice within a cadence, by one worker or two.
 */
export class BookLoop {
  private readonly shares = new Map<number, HeldShare>();
  private readonly seen = new Map<string, Seen>();
  private stopped = false;
  private running: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private settings: BookLoopSettings;
  private readonly abort = new AbortController();
  private counts = { books: 0, unchanged: 0, requests: 0, weight: 0, cycles: 0, overruns: 0 };
  private reportedAtMs: number;
  private readonly logCycleFailure: ReturnType<typeof rateLimitedLog>;

  constructor(private readonly options: BookLoopOptions) {
    this.settings = options.settings;
    this.reportedAtMs = options.clock.now();
    this.logCycleFailure = rateLimitedLog(options.logger, 60_000);
  }

  get venue(): string {
    return this.options.venue;
  }

  update(settings: BookLoopSettings): void {
    this.settings = settings;
  }

  heldShares(): number[] {
    return [...this.shares.keys()].sort((a, b) => a - b);
  }

  addShare(share: number, token: number): void {
    this.shares.set(share, { token, fromMs: this.options.clock.now() + this.settings.cadenceMs, loaded: false });
    this.options.logger.info({ venue: this.venue, share, token }, 'book loop share acquired');
  }

  removeShare(share: number, reason: string): void {
    if (!this.shares.delete(share)) return;
    this.options.logger.info({ venue: this.venue, share, reason }, 'book loop share lost');
  }

  start(): void {
    this.running ??= this.run().catch((err: unknown) => this.options.logger.error({ err, venue: this.venue }, 'book loop ended by an error'));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort(new Error('worker shutting down'));
    this.wake?.();
    await this.running;
  }

  /** Ends a poll-statistics interval: what the loop did since the last one, and the snapshot ages now. */
  report(): BookLoopReport {
    const nowMs = this.options.clock.now();
    const set = this.options.activeSets.cached(this.venue);
    const ages: number[] = [];
    let instruments = 0;
    if (set) {
      for (const symbol of Object.keys(set.instruments)) {
        if (!this.shares.has(bookShareOf(symbol, this.settings.shares))) continue;
        instruments += 1;
        const s = this.seen.get(symbol);
        if (s) ages.push(nowMs - s.seenAtMs);
      }
    }
    ages.sort((a, b) => a - b);
    const at = (q: number): number | null => (ages.length === 0 ? null : ages[Math.min(ages.length - 1, Math.ceil(q * ages.length) - 1)]!);
    const report: BookLoopReport = {
      workerId: this.options.workerId,
      atMs: nowMs,
      intervalMs: nowMs - this.reportedAtMs,
      cadenceMs: this.settings.cadenceMs,
      shares: this.heldShares(),
      instruments,
      ...this.counts,
      p50AgeMs: at(0.5),
      p95AgeMs: at(0.95),
    };
    this.counts = { books: 0, unchanged: 0, requests: 0, weight: 0, cycles: 0, overruns: 0 };
    this.reportedAtMs = nowMs;
    return report;
  }

  private async run(): Promise<void> {
    let lastStart: number | undefined;
    while (!this.stopped) {
      const cadenceMs = this.settings.cadenceMs;
      const nowMs = this.options.clock.now();
      // The first pass on a clock boundary, then each one cadence after the previous one began, or at
      // once when that one ran over: passes begin at least a cadence apart, so no instrument is polled
      // twice within one cadence, and an overrun costs the time it ran over, not a whole cycle.
      const due = lastStart === undefined ? Math.ceil(nowMs / cadenceMs) * cadenceMs : lastStart + cadenceMs;
      if (nowMs < due) {
        await this.sleep(due - nowMs);
        continue;
      }
      if (lastStart !== undefined && nowMs - due > OVERRUN_SLACK_MS) this.counts.overruns += 1;
      lastStart = nowMs;
      try {
        await this.cycle(nowMs);
      } catch (err) {
        // A store or Redis outage fails every cycle: one line a minute per cause, with the count suppressed.
        this.logCycleFailure('warn', (err as NodeJS.ErrnoException).code ?? (err as Error).name, { err, venue: this.venue }, 'book loop cycle failed');
      }
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(
        () => {
          this.wake = undefined;
          resolve();
        },
        Math.max(1, ms),
      );
      timer.unref();
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  private async cycle(startMs: number): Promise<void> {
    const { control, activeSets, clock } = this.options;
    const shares = [...this.shares].filter(([, s]) => s.fromMs <= startMs);
    if (shares.length === 0) return;
    // the venue's cooldown pauses its whole book polling, loop or units
    if ((await control.bookCooldownMs(this.venue)) > 0) return;
    const set = await activeSets.current(this.venue);
    if (!set) return;
    const unloaded = shares.filter(([, s]) => !s.loaded);
    if (unloaded.length > 0) await this.loadLastStored(Object.keys(set.instruments), unloaded);
    const backoff = await this.backoffs();
    const nowMs = clock.now();
    const byShare = new Map<number, string[]>();
    for (const [symbol, inst] of Object.entries(set.instruments)) {
      const share = bookShareOf(symbol, this.settings.shares);
      if (!this.shares.has(share)) continue;
      // expired since the last discovery: no request (retired at the next one)
      if (inst.market.expiresAtMs !== undefined && inst.market.expiresAtMs <= nowMs) continue;
      if ((backoff.get(symbol) ?? 0) > nowMs) continue;
      let list = byShare.get(share);
      if (!list) byShare.set(share, (list = []));
      list.push(symbol);
    }
    const adapter = this.options.host.adapter();
    const perRequest = isBatchBookSource(adapter) ? adapter.maxBooksPerRequest : 1;
    // Batches packed over the shares this worker holds (fewer, fuller requests), each instrument tagged with its share's lease.
    const tagged: Array<{ symbol: string; lease: { name: string; token: number } }> = [];
    for (const [share, held] of shares) {
      const lease = { name: bookShareName(this.venue, share), token: held.token };
      for (const symbol of (byShare.get(share) ?? []).sort()) tagged.push({ symbol, lease });
    }
    const batches: Array<typeof tagged> = [];
    for (let i = 0; i < tagged.length; i += perRequest) batches.push(tagged.slice(i, i + perRequest));
    this.counts.cycles += 1;
    let next = 0;
    let budgetOut = false;
    // A lane is a request in flight: it moves on once an answer is in, while that answer's books are stored.
    const storing: Array<Promise<void>> = [];
    let storeFailure: unknown;
    const worker = async (): Promise<void> => {
      while (!this.stopped && !budgetOut && next < batches.length) {
        const batch = batches[next++]!;
        // fenced: a share lost (or whose renewal is overdue) since the cycle began is not polled
        const symbols = batch.filter((b) => this.options.isHeld(b.lease.name, b.lease.token)).map((b) => b.symbol);
        if (symbols.length === 0) continue;
        try {
          const answer = await this.poll(adapter, symbols, backoff);
          if (answer) storing.push(answer.stored.catch((err: unknown) => void (storeFailure ??= err)));
        } catch (err) {
          if (!(err instanceof BudgetExhaustedError)) throw err;
          budgetOut = true;
        }
      }
    };
    const lanes = Math.max(1, Math.min(this.options.host.inflightLimit(), batches.length));
    try {
      await Promise.all(Array.from({ length: lanes }, worker));
    } finally {
      // the cycle ends when its books are stored, and fails when one batch's could not be
      await Promise.all(storing);
    }
    if (storeFailure !== undefined) throw storeFailure;
  }

  /**
   * Takes over the last-stored markers of shares just acquired (their previous holder wrote them with
   * each batch), so a book unchanged since the last one stored is not stored again; a symbol without
   * a marker forgets this worker's own (older) view. Markers of symbols out of the active set go.
   */
  private async loadLastStored(active: readonly string[], shares: ReadonlyArray<[number, HeldShare]>): Promise<void> {
    const { redis, prefix } = this.options;
    const key = bookLoopKey(prefix, this.venue, 'last');
    const raw = await redis.hgetall(key);
    const wanted = new Set(shares.map(([share]) => share));
    for (const symbol of active) {
      if (!wanted.has(bookShareOf(symbol, this.settings.shares))) continue;
      const marker = parseLastStored(raw[symbol]);
      if (marker) this.seen.set(symbol, marker);
      else this.seen.delete(symbol);
    }
    const activeSet = new Set(active);
    const stale = Object.keys(raw).filter((symbol) => !activeSet.has(symbol));
    if (stale.length > 0) await redis.hdel(key, ...stale);
    for (const [, held] of shares) held.loaded = true;
  }

  /** Publishes the last-stored markers of one batch's books for the next holder of their shares. */
  private async saveLastStored(symbols: readonly string[]): Promise<void> {
    if (symbols.length === 0) return;
    const { redis, prefix } = this.options;
    const key = bookLoopKey(prefix, this.venue, 'last');
    const fields: string[] = [];
    for (const symbol of symbols) {
      const s = this.seen.get(symbol);
      if (s) fields.push(symbol, `${s.digest} ${s.seenAtMs} ${s.unchanged}`);
    }
    // sent back to back on one connection: one round trip
    await Promise.all([redis.hset(key, ...fields), redis.pexpire(key, this.options.lastStoredTtlMs ?? WORKER_DEFAULTS.bookLoopLastStoredTtlMs)]);
  }

  /** Instruments backing off, fleet-wide: symbol -> until (epoch ms). */
  private async backoffs(): Promise<Map<string, number>> {
    const raw = await this.options.redis.hgetall(bookLoopKey(this.options.prefix, this.venue, 'backoff'));
    return new Map(Object.entries(raw).map(([k, v]) => [k, Number(v)]));
  }

  /** One batch request; resolves once the answer is in, with the storing of its books (undefined: the request failed). */
  private async poll(adapter: VenueAdapter, symbols: string[], backoff: Map<string, number>): Promise<{ stored: Promise<void> } | undefined> {
    const { host, clock } = this.options;
    const started = clock.monotonic();
    let batch: BookBatch;
    try {
      batch = await this.fetch(adapter, symbols);
    } catch (err) {
      if (err instanceof BudgetExhaustedError || this.abort.signal.aborted) throw err;
      const latencyMs = clock.monotonic() - started;
      this.counts.requests += 1;
      // the venue failed the whole request: its instruments are not at fault (no backoff), the venue's cooldown and AIMD judge it
      for (const symbol of symbols) host.notePoll(symbol, latencyMs, err);
      await host.noteRequest(latencyMs, err);
      return undefined;
    }
    const latencyMs = clock.monotonic() - started;
    this.counts.requests += 1;
    this.counts.weight += batch.weight;
    await host.noteRequest(latencyMs);
    return { stored: this.keep(batch, latencyMs, backoff) };
  }

  /** A batch's answer: changed books stored, unchanged ones counted, markers written, missing ones backed off. */
  private async keep(batch: BookBatch, latencyMs: number, backoff: Map<string, number>): Promise<void> {
    const { host } = this.options;
    const envelopes: Envelope[] = [];
    const stored: Array<{ symbol: string; digest: string; atMs: number }> = [];
    for (const { book, envelope } of batch.books) {
      const digest = levelsDigest(book.bids, book.asks);
      const prev = this.seen.get(book.symbol);
      host.notePoll(book.symbol, latencyMs);
      if (prev?.digest === digest) {
        prev.seenAtMs = envelope.receivedAtMs;
        prev.unchanged += 1;
        this.counts.unchanged += 1;
        continue;
      }
      // the series is one of changes: a book holds until the next stored one, which says how long its predecessor was seen unchanged
      envelopes.push(
        prev && prev.unchanged > 0
          ? { ...envelope, payload: { ...envelope.payload, prevUnchangedPolls: prev.unchanged, prevSeenAtMs: prev.seenAtMs } }
          : envelope,
      );
      stored.push({ symbol: book.symbol, digest, atMs: envelope.receivedAtMs });
    }
    if (envelopes.length > 0) {
      const result = await this.options.pipeline.pushValidated(envelopes);
      // dropped by a full spool: not stored, so not remembered as the last stored book either
      if (result.dropped === 0) {
        for (const s of stored) this.seen.set(s.symbol, { digest: s.digest, seenAtMs: s.atMs, unchanged: 0 });
        this.counts.books += stored.length;
      }
    }
    await this.saveLastStored(batch.books.map((b) => b.book.symbol));
    const recovered = batch.books.map((b) => b.book.symbol).filter((s) => backoff.has(s));
    if (recovered.length > 0) await this.endBackoff(recovered);
    for (const symbol of batch.missing) await this.backOff(symbol, latencyMs);
  }

  private fetch(adapter: VenueAdapter, symbols: string[]): Promise<BookBatch> {
    const signal = this.abort.signal;
    if (isBatchBookSource(adapter)) return adapter.fetchBooks(symbols, { signal });
    if (!isBookSource(adapter)) throw new Error(`${this.venue} has no order-book source`);
    return adapter.fetchBook(symbols[0]!, { signal }).then((one) => ({ books: [one], missing: [], weight: 1 }));
  }

  /** An instrument the venue had no book for: its fleet-wide failure streak grows, and it waits out its backoff (the job shows why). */
  private async backOff(symbol: string, latencyMs: number): Promise<void> {
    const { control, redis, prefix, clock, store, host } = this.options;
    const id = jobId({ venue: this.venue, type: 'book', symbol });
    const retryAtMs = clock.now() + jitteredBackoffMs(id, await control.bookBackoffMs(this.venue, id, this.options.backoff));
    await redis.hset(bookLoopKey(prefix, this.venue, 'backoff'), symbol, String(retryAtMs));
    const message = `${this.venue} has no order book for ${symbol} in its batch answer (unknown token or resolved market)`;
    host.notePoll(symbol, latencyMs, new VenueRejectedError(this.venue, 404, undefined, message));
    await store.jobs.fail(id, message, retryAtMs).catch((err: unknown) => {
      if (!(err instanceof NotFoundError)) throw err;
    });
  }

  private async endBackoff(symbols: string[]): Promise<void> {
    const { control, redis, prefix } = this.options;
    await redis.hdel(bookLoopKey(prefix, this.venue, 'backoff'), ...symbols);
    for (const symbol of symbols) await control.resetBookBackoff(this.venue, jobId({ venue: this.venue, type: 'book', symbol }));
  }
}

/** A marker as {@link BookLoop.saveLastStored} writes it: `<digest> <seenAtMs> <unchanged>`. */
function parseLastStored(raw: string | undefined): Seen | undefined {
  const parts = raw?.split(' ');
  if (parts?.length !== 3) return undefined;
  const [digest, seenAtMs, unchanged] = [parts[0]!, Number(parts[1]), Number(parts[2])];
  return digest !== '' && Number.isFinite(seenAtMs) && Number.isInteger(unchanged) ? { digest, seenAtMs, unchanged } : undefined;
}

/** A digest of a book's levels: equal digests, unchanged book (the venue's own hash and timestamp change with every answer). */
function levelsDigest(bids: ReadonlyArray<readonly [string, string]>, asks: ReadonlyArray<readonly [string, string]>): string {
  return createHash('sha1')
    .update(JSON.stringify([bids, asks]))
    .digest('base64');
}
