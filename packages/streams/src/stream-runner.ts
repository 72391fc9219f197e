import { type BeforeRequestInfo, type Clock, type Envelope, type StreamDefinition, RateLimitedError, systemClock } from '@tickfleet/core';
import type { RedisClient } from '@tickfleet/queues';
import type { Pipeline } from '@tickfleet/sinks';
import type { StateStore } from '@tickfleet/store';
import { rateLimitedLog, type Logger } from '@tickfleet/telemetry';
import { BinanceStreamSession } from './binance-stream-session.js';
import { ConnectAttempts } from './connect-attempts.js';
import { streamEventEnvelope, streamGapJobId, type RecordedStreamEvent } from './internal/stream-events.js';
import { KRAKEN_REST_URL, KrakenStreamSession } from './kraken-stream-session.js';
import { StreamCheckpoints } from './stream-checkpoints.js';
import { STREAM_DEFAULTS, streamLiveTtlMs, streamStatsEveryMs } from './stream-defaults.js';
import { StreamLeases, type StreamLostReason } from './stream-leases.js';
import { publishStreamLive, streamLiveKey, type StreamLiveState } from './stream-live.js';
import type { StreamMetrics } from './stream-metrics.js';
import type { StreamEvent, StreamSession, StreamSessionStats } from './stream-session.js';

/** Where the worker's stream sessions connect; REST calls (book snapshots, trade healing) go to the venue's connector `baseUrl`. */
export interface StreamEndpoints {
  binanceWsUrl: string;
  krakenWsUrl: string;
}

export interface StreamRunnerOptions {
  connection: RedisClient;
  prefix: string;
  workerId: string;
  store: StateStore;
  pipeline: Pipeline;
  /** The worker's budget gate: every REST call of a session spends the venue's shared budget, as units do. */
  gate: { beforeRequest(info: BeforeRequestInfo): Promise<void> };
  logger: Logger;
  metrics: StreamMetrics;
  endpoints: StreamEndpoints;
  /** Venues this worker serves (TICKFLEET_VENUES); streams of others are left to other workers. */
  venues?: readonly string[];
  /** Lease lifetime. @defaultValue {@link STREAM_DEFAULTS.leaseTtlMs} */
  leaseTtlMs?: number;
  /** How often the definitions' version is read. @defaultValue {@link STREAM_DEFAULTS.definitionsPollMs} */
  pollMs?: number;
  /** Silence timeout of the sessions. @defaultValue {@link STREAM_DEFAULTS.silenceTimeoutMs} */
  silenceTimeoutMs?: number;
  clock?: Clock;
}

/** One stream this worker runs: its lease token, the definition it was opened with, and its session. */
interface HeldStream {
  name: string;
  token: number;
  def: StreamDefinition;
  session: StreamSession;
  /** Stop requested (lease lost, definition changed, shutdown). */
  stopping: boolean;
  /** Gap-ledger and stream_events writes in flight: a checkpoint never passes a hole before its entry is durable. */
  ledger: Promise<void>;
  /** Records the pipeline stored, and those it skipped as already stored or seen (the dedup by message id). */
  stored: number;
  duplicates: number;
  /** Symbols whose checkpoint exists: before the first trade of any other symbol is stored, its start is marked (see deliver). */
  marked: Set<string>;
}

/** What `/healthz` and the Redis live-state key say about one held stream: the published contract, with the session's own state type. */
export type StreamHealth = StreamLiveState & { state: StreamSessionStats['state']; timeQuality: StreamSessionStats['timeQuality'] };

/**
 * Runs the fleet's streams on this worker (docs/streams-fleet.md): keeps {@link StreamLeases} fed
 * with the enabled definitions, opens a venue session for each stream it acquires (resuming from
 * the stream's checkpoint), stops it when the lease goes, writes its records through the worker's
 * pipeline and advances the checkpoint only after they are durable. Unhealed trade-id ranges go on
 * the gap ledger; every gap, heal, unhealed range and resync is also a `stream_events` record.
 */
export class StreamRunner {
  private readonly leases: StreamLeases;
  private readonly checkpoints: StreamCheckpoints;
  private readonly attempts: ConnectAttempts;
  private readonly clock: Clock;
  private readonly leaseTtlMs: number;
  private readonly held = new Map<string, HeldStream>();
  /** Per-stream chain of opens and stops, so a stop never races the open it follows. */
  private readonly ops = new Map<string, Promise<void>>();
  private defs = new Map<string, StreamDefinition>();
  private version = -1;
  private timers: NodeJS.Timeout[] = [];
  private stopped = false;
  /** Whether the lease cycles run (from the first time an enabled stream of a served venue exists). */
  private leasing = false;
  private readonly log: ReturnType<typeof rateLimitedLog>;
  private readonly lastStats = new Map<string, StreamSessionStats>();

  constructor(private readonly options: StreamRunnerOptions) {
    this.clock = options.clock ?? systemClock;
    this.leaseTtlMs = options.leaseTtlMs ?? STREAM_DEFAULTS.leaseTtlMs;
    this.checkpoints = new StreamCheckpoints(options.connection, options.prefix);
    this.attempts = new ConnectAttempts(options.connection, { prefix: options.prefix });
    this.log = rateLimitedLog(options.logger, 60_000);
    this.leases = new StreamLeases(options.connection, options.workerId, {
      prefix: options.prefix,
      ttlMs: this.leaseTtlMs,
      clock: this.clock,
      onAcquired: (name, token) => this.open(name, token),
      onLost: (name, reason) => this.close(name, reason),
      onError: (err) => this.log('warn', 'lease-cycle', { err }, 'stream lease cycle failed'),
    });
  }

  /** Reads the definitions once (a store that cannot be read fails the start), then runs the lease cycles and the polls. */
  async start(): Promise<void> {
    await this.refreshDefinitions();
    const pollMs = this.options.pollMs ?? STREAM_DEFAULTS.definitionsPollMs;
    const statsMs = streamStatsEveryMs(this.leaseTtlMs);
    this.timers.push(
      setInterval(
        () => void this.refreshDefinitions().catch((err: unknown) => this.log('warn', 'stream-defs', { err }, 'could not read the stream definitions')),
        pollMs,
      ),
      setInterval(() => void this.publish().catch((err: unknown) => this.log('warn', 'stream-live', { err }, 'could not publish stream state')), statsMs),
    );
    for (const t of this.timers) t.unref();
  }

  /**
   * Graceful stop: hands every stream to the other workers at once (releaseAll), then stops the
   * sessions, which deliver the records they hold through the pipeline (so call it before the
   * pipeline closes).
   */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    if (this.leasing) {
      // Bounded: with Redis unreachable the leases expire on their own after their TTL.
      const released = this.leases.stop().then(
        () => true,
        (err: unknown) => {
          this.options.logger.warn({ err }, 'could not release the stream leases; they expire on their own');
          return true;
        },
      );
      const timeout = new Promise<boolean>((r) => setTimeout(() => r(false), STREAM_DEFAULTS.releaseTimeoutMs).unref());
      if (!(await Promise.race([released, timeout])))
        this.options.logger.warn({ timeoutMs: STREAM_DEFAULTS.releaseTimeoutMs }, 'stream lease release timed out; they expire on their own');
    }
    // An open already under way when the stop came adds its session after the first pass: closed by the next.
    while (this.held.size > 0 || this.ops.size > 0) {
      for (const name of [...this.held.keys()]) this.close(name, 'released');
      await Promise.all([...this.ops.values()]);
    }
  }

  /** The streams this worker runs now, for `/healthz`. */
  health(): StreamHealth[] {
    return [...this.held.values()].map((h) => this.describe(h));
  }

  /** Reads `streamsVersion()`; lists the definitions only when it moved, and restarts held streams whose definition changed. */
  async refreshDefinitions(): Promise<void> {
    const version = await this.options.store.streams.streamsVersion();
    if (version === this.version) return;
    const listed = await this.options.store.streams.list({ enabled: true });
    const venues = this.options.venues;
    const defs = new Map(listed.filter((d) => !venues || venues.includes(d.venue)).map((d) => [d.name, d]));
    // The version read before the list: a change between them moves it again and the next poll lists anew.
    if (!this.leases.setStreams([...defs.keys()], version)) return;
    this.defs = defs;
    this.version = version;
    // A fleet without streams costs no lease cycles: a worker joins once there is something to hold.
    if (!this.leasing && !this.stopped && defs.size > 0) {
      this.leasing = true;
      this.leases.start();
    }
    for (const h of this.held.values()) {
      const def = defs.get(h.name);
      if (def && def.version !== h.def.version) {
        this.options.logger.info({ stream: h.name, version: def.version }, 'stream definition changed; reopening its session');
        this.close(h.name, 'changed');
        this.open(h.name, h.token);
      }
    }
  }

  private chain(name: string, fn: () => Promise<void>): void {
    const next = (this.ops.get(name) ?? Promise.resolve())
      .then(fn)
      .catch((err: unknown) => this.log('error', `op:${name}`, { err, stream: name }, 'stream session operation failed'));
    this.ops.set(name, next);
    void next.finally(() => {
      if (this.ops.get(name) === next) this.ops.delete(name);
    });
  }

  private open(name: string, token: number): void {
    this.chain(name, async () => {
      if (this.stopped || this.held.has(name) || !this.leases.isHeld(name, token)) return;
      const def = this.defs.get(name);
      if (!def) return;
      const resume = await this.checkpoints.claim(name, token);
      if (resume === null) {
        this.options.logger.warn({ stream: name, token }, 'a newer holder claimed the stream checkpoint; not opening');
        return;
      }
      const held: HeldStream = {
        name,
        token,
        def,
        session: undefined as unknown as StreamSession,
        stopping: false,
        ledger: Promise.resolve(),
        stored: 0,
        duplicates: 0,
        marked: new Set(Object.keys(resume)),
      };
      held.session = await this.createSession(held, resume);
      this.held.set(name, held);
      await held.session.start();
      this.options.logger.info({ stream: name, venue: def.venue, token, symbols: def.symbols.length, resumeFrom: resume }, 'stream session started');
    });
  }

  private close(name: string, reason: StreamLostReason | 'changed' | 'lease gone'): void {
    const h = this.held.get(name);
    if (h) h.stopping = true;
    this.chain(name, async () => {
      const held = this.held.get(name);
      if (!held) return;
      held.stopping = true;
      try {
        await held.session.stop();
        await held.ledger;
      } finally {
        // Gone even when its stop failed (logged by chain): a stream is never left half-held.
        this.held.delete(name);
      }
      this.lastStats.delete(name);
      this.options.metrics.forget(held.def.venue, name);
      await this.options.connection.del(this.liveKey(name)).catch(() => undefined);
      this.options.logger.info({ stream: name, reason, token: held.token }, 'stream session stopped');
    });
  }

  private async createSession(held: HeldStream, resume: Record<string, number>): Promise<StreamSession> {
    const { def } = held;
    const common = {
      symbols: def.symbols,
      channels: def.channels,
      clock: this.clock,
      silenceTimeoutMs: this.options.silenceTimeoutMs ?? STREAM_DEFAULTS.silenceTimeoutMs,
      ...(Object.keys(resume).length > 0 ? { resumeTradeIds: resume } : {}),
      onRecords: (envelopes: Envelope[]) => this.deliver(held, envelopes),
      onEvent: (event: StreamEvent) => this.onEvent(held, event),
      beforeRestRequest: (req: { venue: string; endpoint: string; weight: number }) => this.options.gate.beforeRequest(req),
      beforeConnect: async ({ venue }: { venue: string }) => {
        const attempt = await this.attempts.tryConnectAttempt(venue);
        if (!attempt.allowed) {
          throw new RateLimitedError(
            venue,
            this.clock.now() + attempt.retryAfterMs,
            `${venue}: the fleet's connection attempts are spent for ${attempt.retryAfterMs} ms`,
          );
        }
      },
    };
    if (def.venue === 'binance') {
      const connector = await this.options.store.connectors.get('binance');
      return new BinanceStreamSession({
        ...common,
        wsBaseUrl: this.options.endpoints.binanceWsUrl,
        restBaseUrl: connector?.baseUrl ?? 'https://api.binance.com',
        ...(def.bookDepth !== null ? { depthLimit: def.bookDepth } : {}),
      });
    }
    const kraken = await this.options.store.connectors.get('kraken');
    return new KrakenStreamSession({
      ...common,
      url: this.options.endpoints.krakenWsUrl,
      restBaseUrl: kraken?.baseUrl ?? KRAKEN_REST_URL,
      ...(def.bookDepth !== null ? { depth: def.bookDepth } : {}),
    });
  }

  /**
   * A session's batch: stored through the pipeline (validation, dedup, spool), then the checkpoint
   * moves to the batch's last trade id per symbol. A holder whose lease is gone still writes what
   * it holds (venue data, deduplicated by message id) but its checkpoint moves no more once a newer
   * holder claimed it, and its session is stopped.
   */
  private async deliver(held: HeldStream, envelopes: Envelope[]): Promise<void> {
    if (!held.stopping && !this.leases.isHeld(held.name, held.token)) this.close(held.name, 'lease gone');
    const lastIds = new Map<string, number>();
    const ranges = new Map<string, { from: number; to: number }>();
    for (const e of envelopes) {
      if (e.channel !== 'trades') continue;
      const id = Number((e.payload as { tradeId: string }).tradeId);
      lastIds.set(e.symbol, Math.max(lastIds.get(e.symbol) ?? id, id));
      const r = ranges.get(e.symbol);
      ranges.set(e.symbol, r ? { from: Math.min(r.from, id), to: Math.max(r.to, id) } : { from: id, to: id });
    }
    // A symbol without a checkpoint gets one just below its first trade before that trade is
    // stored: a later holder then resumes from there and heals whatever lies between this
    // holder's last stored trade and its own first. Refused means a newer holder claimed the
    // stream before this one stored anything of the symbol: it owns those trades, so they are not
    // written here.
    const starts = new Map([...ranges].filter(([symbol]) => !held.marked.has(symbol)).map(([symbol, r]) => [symbol, r.from - 1]));
    if (starts.size > 0) {
      if (!(await this.checkpoints.advance(held.name, held.token, starts))) {
        this.options.logger.warn(
          { stream: held.name, token: held.token },
          'a newer holder took the stream before its first trades were stored; stopping this session',
        );
        if (!held.stopping) this.close(held.name, 'lease gone');
        return;
      }
      for (const symbol of starts.keys()) held.marked.add(symbol);
    }
    const result = await this.options.pipeline.push(envelopes);
    held.stored += result.stored + result.spooled;
    held.duplicates += result.duplicates;
    if (result.rejected.length > 0) {
      this.log('warn', `rejected:${held.name}`, { stream: held.name, rejected: result.rejected.length }, 'stream records rejected by validation');
      // A rejected trade is not stored: its id goes on the ledger, or the checkpoint would pass a silent hole.
      for (const { index, error } of result.rejected) {
        const e = envelopes[index];
        const id = e?.channel === 'trades' ? Number((e.payload as { tradeId?: unknown }).tradeId) : NaN;
        if (e && Number.isSafeInteger(id))
          this.onEvent(held, {
            type: 'unhealed',
            symbol: e.symbol,
            channel: 'trades',
            fromId: id,
            toId: id,
            reason: `rejected by validation: ${error.message}`,
          });
      }
    }
    if (result.dropped > 0) {
      // The spool was full under drop_all: which trades of the batch went is not known, so each symbol's range goes on the ledger.
      for (const [symbol, r] of ranges) {
        this.onEvent(held, {
          type: 'unhealed',
          symbol,
          channel: 'trades',
          fromId: r.from,
          toId: r.to,
          reason: `spool full: ${result.dropped} records of the batch dropped`,
        });
      }
    }
    // Unhealed ranges reported before this batch are on the ledger before the checkpoint passes them.
    await held.ledger;
    if (!(await this.checkpoints.advance(held.name, held.token, lastIds)) && !held.stopping) {
      this.options.logger.warn({ stream: held.name, token: held.token }, 'a newer holder took the stream; stopping this session');
      this.close(held.name, 'lease gone');
    }
  }

  private onEvent(held: HeldStream, event: StreamEvent): void {
    const { name } = held;
    const venue = held.def.venue;
    switch (event.type) {
      case 'gap':
      case 'healed':
      case 'unhealed':
      case 'resync':
      case 'checksum-mismatch':
        this.record(held, event);
        return;
      case 'disconnected':
      case 'silent':
      case 'venue-error':
      case 'pipeline-error':
      case 'garbled':
        this.log('warn', `${event.type}:${name}`, { stream: name, venue, ...event }, `stream ${event.type}`);
        return;
      case 'connected':
        this.options.logger.debug({ stream: name, venue, attempt: event.attempt }, 'stream connected');
        return;
    }
  }

  /** Queues the event's stream_events record (and an unhealed range's ledger entry) behind the stream's earlier ones. */
  private record(held: HeldStream, event: RecordedStreamEvent): void {
    const now = this.clock.now();
    const envelope = streamEventEnvelope(held.def.venue, held.name, this.options.workerId, event, now);
    held.ledger = held.ledger.then(async () => {
      try {
        if (event.type === 'unhealed') {
          await this.options.store.gaps.record(
            { jobId: streamGapJobId(held.def.venue, event.symbol), fromMs: event.fromId, toMs: event.toId + 1, kind: 'trade-ids' },
            now,
          );
        }
        await this.options.pipeline.push([envelope]);
      } catch (err) {
        this.log('error', `ledger:${held.name}`, { err, stream: held.name, event }, 'could not record a stream event');
      }
    });
  }

  private describe(h: HeldStream): StreamHealth {
    const s = h.session.stats();
    return {
      name: h.name,
      venue: h.def.venue,
      worker: this.options.workerId,
      token: h.token,
      state: s.state,
      connectedSince: s.connectedSinceMs === null ? null : new Date(s.connectedSinceMs).toISOString(),
      messages: s.messages,
      reconnects: s.reconnects,
      gapsFound: s.gapsFound,
      gapsHealed: s.gapsHealed,
      gapsUnhealed: s.gapsUnhealed,
      resyncs: s.resyncs,
      checksumMismatches: s.checksumMismatches,
      garbledFrames: s.garbledFrames,
      lastMessageAgeMs: s.lastMessageAgeMs,
      recordsDelivered: s.recordsDelivered,
      stored: h.stored,
      duplicates: h.duplicates,
      timeQuality: s.timeQuality,
      updatedAt: this.clock.now(),
    };
  }

  private liveKey(name: string): string {
    return streamLiveKey(this.options.prefix, name);
  }

  /**
   * Each cycle: reopens leases held without a session (an open that failed), stops sessions whose
   * lease is gone, moves the metrics by the stats' growth, and writes each held stream's live state
   * to Redis with a short TTL for `tickfleet status`.
   */
  private async publish(): Promise<void> {
    if (this.stopped) return;
    for (const [name, token] of this.leases.held()) if (!this.held.has(name) && !this.ops.has(name)) this.open(name, token);
    const ttlMs = streamLiveTtlMs(this.leaseTtlMs);
    const writes: Array<Promise<unknown>> = [];
    for (const h of this.held.values()) {
      if (h.stopping) continue;
      if (!this.leases.isHeld(h.name, h.token)) {
        this.close(h.name, 'lease gone');
        continue;
      }
      const stats = h.session.stats();
      this.options.metrics.observe(h.def.venue, h.name, stats, this.lastStats.get(h.name));
      this.lastStats.set(h.name, stats);
      writes.push(publishStreamLive(this.options.connection, this.options.prefix, this.describe(h), ttlMs));
    }
    await Promise.all(writes);
  }
}
