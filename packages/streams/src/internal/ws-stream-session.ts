import { WebSocket, type RawData } from 'ws';
import { STREAM_CHANNELS, systemClock, ValidationError, type Clock, type Envelope } from '@tickfleet/core';
import { TimeQualityTracker } from './time-quality.js';
import { STREAM_DEFAULTS } from '../stream-defaults.js';
import { type StreamEvent, type StreamSession, type StreamSessionOptions, type StreamSessionStats, type StreamState } from '../stream-session.js';

/** Queued messages above which the socket is paused (the pipeline is behind), and below which it resumes. */
const HIGH_WATER = 5000;
const LOW_WATER = 1000;
/** Records handed to `onRecords` in one call at most. */
const MAX_BATCH = 1000;
/** Clock time between two `garbled` events: a burst of bad frames is one event, not thousands. */
const GARBLED_REPORT_MS = 10_000;
/** Delivery attempts of a batch while the session is stopping, before its trades are reported unhealed. */
const STOP_DELIVERY_ATTEMPTS = 3;
/** How long `stop` waits for the venue's close frame before dropping the socket. */
const CLOSE_GRACE_MS = 2000;

type QueueItem = { kind: 'message'; text: string | undefined; receivedAtMs: number } | { kind: 'open'; ws: WebSocket } | { kind: 'close' };

/** What a venue-specific session adds to the connection handling below. */
export interface ConnectionLimits {
  /** Connection attempts allowed per sliding window (Binance: 300 per 5 min per IP); undefined: none. */
  attempts?: { limit: number; windowMs: number };
}

/**
 * The venue-independent half of a stream session: one WebSocket at a time, reopened with jittered
 * exponential backoff; a silence watchdog; messages processed strictly one after another in arrival
 * order (a subclass may await REST calls in between: later messages wait in the queue, and the socket
 * is paused when the queue grows, so a slow pipeline or REST call never loses data); records delivered
 * to `onRecords` in batches and retried while it throws.
 */
export abstract class WsStreamSession implements StreamSession {
  abstract readonly venue: string;
  protected readonly clock: Clock;
  protected readonly opts: StreamSessionOptions;
  protected readonly silenceTimeoutMs: number;
  protected readonly bookSnapshotMs: number;
  protected readonly bookLevels: number;
  private readonly backoffInitialMs: number;
  private readonly backoffMaxMs: number;
  private readonly timeQuality = new TimeQualityTracker();

  private running = false;
  private stopped = false;
  private loop: Promise<void> | undefined;
  private ws: WebSocket | undefined;
  private paused = false;
  private phase: 'connecting' | 'open' | 'backoff' = 'connecting';
  private connectedSinceMs: number | null = null;
  private lastMessageAtMs: number | null = null;
  /** Ends the waits in progress (backoff, delivery retry) when the session stops. */
  private readonly wakers = new Set<() => void>();
  private readonly queue: QueueItem[] = [];
  private draining: Promise<void> | undefined;
  private outbox: Envelope[] = [];
  private garbledReportedAtMs: number | null = null;
  private garbledUnreported = 0;
  private readonly attemptTimes: number[] = [];
  protected readonly counters = {
    messages: 0,
    reconnects: 0,
    connectAttempts: 0,
    gapsFound: 0,
    gapsHealed: 0,
    gapsUnhealed: 0,
    resyncs: 0,
    checksumMismatches: 0,
    garbledFrames: 0,
    binaryFrames: 0,
    pipelineErrors: 0,
    recordsDelivered: 0,
  };
  /** Last trade id per canonical symbol, across reconnects. */
  protected readonly lastTradeIds = new Map<string, number>();

  constructor(
    options: StreamSessionOptions,
    private readonly limits: ConnectionLimits,
  ) {
    if (options.symbols.length === 0) throw new ValidationError('symbols', 'at least one symbol');
    if (options.channels.length === 0) throw new ValidationError('channels', `at least one of ${STREAM_CHANNELS.join(', ')}`);
    for (const c of options.channels) if (!STREAM_CHANNELS.includes(c)) throw new ValidationError('channels', `one of ${STREAM_CHANNELS.join(', ')}`, c);
    this.opts = options;
    this.clock = options.clock ?? systemClock;
    this.silenceTimeoutMs = positiveInt('silenceTimeoutMs', options.silenceTimeoutMs, STREAM_DEFAULTS.silenceTimeoutMs);
    this.bookSnapshotMs = positiveInt('bookSnapshotMs', options.bookSnapshotMs, 1000);
    this.bookLevels = positiveInt('bookLevels', options.bookLevels, 20);
    this.backoffInitialMs = positiveInt('backoff.initialMs', options.backoff?.initialMs, 500);
    this.backoffMaxMs = Math.max(this.backoffInitialMs, positiveInt('backoff.maxMs', options.backoff?.maxMs, 30_000));
    for (const [symbol, id] of Object.entries(options.resumeTradeIds ?? {})) {
      if (!Number.isSafeInteger(id) || id < 0) throw new ValidationError(`resumeTradeIds.${symbol}`, 'a non-negative integer trade id', id);
      this.lastTradeIds.set(symbol, id);
    }
  }

  /** The URL of the next connection. */
  protected abstract url(): string;
  /** A connection opened (in queue order): reset per-connection state, send subscriptions. */
  protected abstract onOpen(ws: WebSocket): void | Promise<void>;
  /** The connection closed (in queue order, after its last message): per-connection state is void. */
  protected abstract onClose(): void;
  /** One text frame; 'garbled' when it cannot be parsed. */
  protected abstract onText(text: string, receivedAtMs: number): Promise<void | 'garbled'>;
  /** Whether every book the session keeps is in sync (state `live` vs `resyncing`). */
  protected abstract booksInSync(): boolean;

  start(): Promise<void> {
    if (this.running || this.stopped) return Promise.reject(new ValidationError('start', 'a session that was never started'));
    this.running = true;
    this.loop = this.run();
    return Promise.resolve();
  }

  async stop(): Promise<void> {
    if (!this.running) {
      this.stopped = true;
      return;
    }
    this.running = false;
    this.stopped = true;
    for (const wake of this.wakers) wake();
    const ws = this.ws;
    if (ws && ws.readyState !== WebSocket.CLOSED) {
      ws.resume();
      ws.close(1000, 'session stopped');
      const timer = setTimeout(() => ws.terminate(), CLOSE_GRACE_MS);
      await new Promise<void>((resolve) => ws.once('close', () => resolve()));
      clearTimeout(timer);
    }
    await this.loop;
    await this.drain();
    await this.flush();
  }

  stats(): StreamSessionStats {
    const now = this.clock.now();
    let state: StreamState;
    if (this.stopped) state = 'stopped';
    else if (this.phase === 'backoff') state = 'backoff';
    else if (this.phase === 'connecting') state = 'connecting';
    else state = this.booksInSync() ? 'live' : 'resyncing';
    const windowMs = this.limits.attempts?.windowMs ?? 0;
    const c = this.counters;
    return {
      venue: this.venue,
      state,
      connectedSinceMs: this.connectedSinceMs,
      messages: c.messages,
      reconnects: c.reconnects,
      connectAttempts: c.connectAttempts,
      recentConnectAttemptsMs: this.attemptTimes.filter((t) => t > now - windowMs),
      gapsFound: c.gapsFound,
      gapsHealed: c.gapsHealed,
      gapsUnhealed: c.gapsUnhealed,
      resyncs: c.resyncs,
      checksumMismatches: c.checksumMismatches,
      garbledFrames: c.garbledFrames,
      pipelineErrors: c.pipelineErrors,
      lastMessageAgeMs: this.lastMessageAtMs === null ? null : Math.max(0, now - this.lastMessageAtMs),
      recordsDelivered: c.recordsDelivered,
      lastTradeIds: Object.fromEntries(this.lastTradeIds),
      timeQuality: this.timeQuality.summary(),
    };
  }

  protected event(e: StreamEvent): void {
    try {
      this.opts.onEvent?.(e);
    } catch {
      // an observer's failure must not take the connection (and the records) down with it
    }
  }

  /** Queues records for delivery; they leave in order, in batches, when the queue runs dry or the batch is full. */
  protected push(...envelopes: Envelope[]): void {
    for (const e of envelopes) this.outbox.push(e);
  }

  protected observeTime(key: string, exchangeMs: number, receivedAtMs: number): void {
    this.timeQuality.observe(key, exchangeMs, receivedAtMs);
  }

  /** Delivers what is in the outbox now: called before a long REST call, so records do not wait behind it. */
  protected async flush(): Promise<void> {
    while (this.outbox.length > 0) {
      const batch = this.outbox.slice(0, MAX_BATCH);
      await this.deliver(batch);
      this.outbox = this.outbox.slice(batch.length);
    }
  }

  private async deliver(batch: Envelope[]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.opts.onRecords(batch);
        this.counters.recordsDelivered += batch.length;
        return;
      } catch (err) {
        this.counters.pipelineErrors += 1;
        this.event({ type: 'pipeline-error', records: batch.length, error: err instanceof Error ? err.message : String(err), attempt });
        if (!this.running && attempt >= STOP_DELIVERY_ATTEMPTS) {
          this.reportUndelivered(batch, err);
          return;
        }
        await this.sleep(this.backoffDelay(attempt - 1));
      }
    }
  }

  /** The session stops with records the pipeline refused: their trades become unhealed ranges, never a silent hole. */
  private reportUndelivered(batch: Envelope[], err: unknown): void {
    const ids = new Map<string, number[]>();
    for (const e of batch) {
      if (e.channel !== 'trades') continue;
      const id = Number((e.payload as { tradeId?: unknown }).tradeId);
      if (!Number.isSafeInteger(id)) continue;
      const list = ids.get(e.symbol) ?? [];
      list.push(id);
      ids.set(e.symbol, list);
    }
    const reason = `pipeline refused the records at stop: ${err instanceof Error ? err.message : String(err)}`;
    for (const [symbol, list] of ids) {
      list.sort((a, b) => a - b);
      let from = list[0] ?? 0;
      let prev = from;
      for (const id of [...list.slice(1), Number.NaN]) {
        if (id === prev + 1) {
          prev = id;
          continue;
        }
        this.counters.gapsUnhealed += 1;
        this.event({ type: 'unhealed', symbol, channel: 'trades', fromId: from, toId: prev, reason });
        from = id;
        prev = id;
      }
    }
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (this.running) {
      try {
        await this.admitAttempt();
      } catch (err) {
        // the fleet refused the attempt (its shared count is full, Redis is down): wait and ask again
        this.event({ type: 'venue-error', message: `connection attempt not admitted: ${err instanceof Error ? err.message : String(err)}` });
        this.phase = 'backoff';
        await this.sleep(this.backoffMaxMs);
        continue;
      }
      if (!this.running) break;
      const { hadData, refusedStatus } = await this.connectOnce();
      if (!this.running) break;
      this.counters.reconnects += 1;
      failures = hadData ? 0 : failures + 1;
      // refused for too many attempts (429) or banned (418): wait the longest backoff
      const delay = refusedStatus === 429 || refusedStatus === 418 ? this.backoffMaxMs : this.backoffDelay(failures);
      this.phase = 'backoff';
      await this.sleep(delay);
    }
  }

  /** Waits for the venue's attempt window (tracked locally) and the fleet's `beforeConnect`. */
  private async admitAttempt(): Promise<void> {
    const limit = this.limits.attempts;
    while (this.running && limit) {
      const now = this.clock.now();
      while (this.attemptTimes.length > 0 && (this.attemptTimes[0] ?? now) <= now - limit.windowMs) this.attemptTimes.shift();
      if (this.attemptTimes.length < limit.limit) break;
      this.phase = 'backoff';
      await this.sleep(Math.min(1000, (this.attemptTimes[0] ?? now) + limit.windowMs - now));
    }
    if (!this.running) return;
    await this.opts.beforeConnect?.({ venue: this.venue });
    this.attemptTimes.push(this.clock.now());
    this.counters.connectAttempts += 1;
  }

  /** One connection, from upgrade to close. */
  private connectOnce(): Promise<{ hadData: boolean; refusedStatus?: number }> {
    this.phase = 'connecting';
    const url = this.url();
    const ws = new WebSocket(url, { perMessageDeflate: false });
    this.ws = ws;
    let frames = 0;
    let refusedStatus: number | undefined;
    let errorText: string | undefined;
    let watchdog: NodeJS.Timeout | undefined;
    return new Promise((resolve) => {
      ws.on('open', () => {
        this.phase = 'open';
        this.connectedSinceMs = this.clock.now();
        this.lastMessageAtMs = this.clock.now();
        this.event({ type: 'connected', url: redactUrl(url), attempt: this.counters.connectAttempts });
        this.enqueue({ kind: 'open', ws });
        const every = Math.max(10, Math.min(1000, Math.floor(this.silenceTimeoutMs / 4)));
        watchdog = setInterval(() => this.checkSilence(ws), every);
      });
      ws.on('message', (data: RawData, isBinary: boolean) => {
        const receivedAtMs = this.clock.now();
        this.lastMessageAtMs = receivedAtMs;
        frames += 1;
        this.enqueue({ kind: 'message', text: isBinary ? undefined : rawText(data), receivedAtMs });
      });
      ws.on('ping', () => {
        this.lastMessageAtMs = this.clock.now();
      });
      ws.on('error', (err: Error) => {
        errorText = err.message;
        const m = /Unexpected server response: (\d{3})/.exec(err.message);
        if (m) refusedStatus = Number(m[1]);
      });
      ws.on('close', (code: number, reason: Buffer) => {
        clearInterval(watchdog);
        const wasOpen = this.phase === 'open';
        this.connectedSinceMs = null;
        if (this.ws === ws) this.ws = undefined;
        this.paused = false;
        if (wasOpen) this.enqueue({ kind: 'close' });
        const text = reason.toString('utf8');
        this.event({ type: 'disconnected', reason: text || errorText || (wasOpen ? 'connection closed' : 'connection failed'), code });
        resolve({ hadData: frames > 0, ...(refusedStatus === undefined ? {} : { refusedStatus }) });
      });
    });
  }

  /** Silence is counted on the session's clock; a paused socket is ours, not the venue's. */
  private checkSilence(ws: WebSocket): void {
    if (this.paused || this.lastMessageAtMs === null || ws.readyState !== WebSocket.OPEN) return;
    const ms = this.clock.now() - this.lastMessageAtMs;
    if (ms < this.silenceTimeoutMs) return;
    this.event({ type: 'silent', ms });
    ws.terminate();
  }

  private enqueue(item: QueueItem): void {
    this.queue.push(item);
    if (this.queue.length > HIGH_WATER && this.ws && !this.paused) {
      this.paused = true;
      this.ws.pause();
    }
    this.draining ??= this.drainLoop().finally(() => {
      this.draining = undefined;
    });
  }

  private async drain(): Promise<void> {
    while (this.draining) await this.draining;
  }

  private async drainLoop(): Promise<void> {
    while (this.queue.length > 0) {
      const item = this.queue.shift() as QueueItem;
      if (this.paused && this.queue.length < LOW_WATER) {
        this.paused = false;
        this.ws?.resume();
      }
      try {
        await this.process(item);
      } catch (err) {
        // a bug or a venue answer nothing anticipated: surfaced, and the next message goes on
        this.event({ type: 'venue-error', message: err instanceof Error ? err.message : String(err) });
      }
      if (this.queue.length === 0 || this.outbox.length >= MAX_BATCH) await this.flush();
    }
  }

  private async process(item: QueueItem): Promise<void> {
    if (item.kind === 'open') {
      // the socket that opened, not the current one: with a backlog, a later connection may already be up
      if (item.ws.readyState === WebSocket.OPEN) await this.onOpen(item.ws);
      return;
    }
    if (item.kind === 'close') {
      this.onClose();
      return;
    }
    if (item.text === undefined || (await this.onText(item.text, item.receivedAtMs)) === 'garbled') {
      this.counters.messages += 1;
      this.counters.garbledFrames += 1;
      if (item.text === undefined) this.counters.binaryFrames += 1;
      this.garbledUnreported += 1;
      const now = this.clock.now();
      if (this.garbledReportedAtMs === null || now - this.garbledReportedAtMs >= GARBLED_REPORT_MS) {
        this.event({ type: 'garbled', frames: this.counters.garbledFrames, binary: this.counters.binaryFrames, sinceLastReport: this.garbledUnreported });
        this.garbledReportedAtMs = now;
        this.garbledUnreported = 0;
      }
    }
  }

  /** Full-jitter-ish backoff: between half and all of `initial * 2^n`, capped. */
  protected backoffDelay(n: number): number {
    const base = Math.min(this.backoffMaxMs, this.backoffInitialMs * 2 ** Math.min(n, 30));
    return Math.round(base / 2 + Math.random() * (base / 2));
  }

  /** A real-time wait that ends early when the session stops. */
  private sleep(ms: number): Promise<void> {
    if (!this.running) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.wakers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakers.add(done);
    });
  }
}

/** A `ws://` or `wss://` URL without a trailing slash; a clear error naming the option otherwise. */
export function normaliseWsUrl(name: string, value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ValidationError(name, 'a ws:// or wss:// URL', value);
  }
  if (url.protocol !== 'ws:' && url.protocol !== 'wss:') throw new ValidationError(name, 'a ws:// or wss:// URL', value);
  return value.replace(/\/+$/, '');
}

function positiveInt(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 1) throw new ValidationError(name, 'a positive integer', value);
  return value;
}

/** The text of a frame (ws hands over a Buffer, a Buffer list or an ArrayBuffer). */
function rawText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}

/** A URL as events may show it: no credentials or query values. */
function redactUrl(url: string): string {
  const u = new URL(url);
  u.username = '';
  u.password = '';
  for (const k of [...u.searchParams.keys()]) if (k !== 'streams') u.searchParams.set(k, '…');
  return u.toString();
}
