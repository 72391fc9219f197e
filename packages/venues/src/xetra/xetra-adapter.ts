import { promisify } from 'node:util';
import { gunzip as gunzipCb } from 'node:zlib';
import {
  MalformedPayloadError,
  type Pacing,
  RateLimitedError,
  ValidationError,
  VENUE_RATE_LIMIT_DEFAULTS,
  type Envelope,
  type Trade,
  tradeEnvelope,
} from '@tickfleet/core';
import PQueue from 'p-queue';
import { HttpVenueAdapter } from '../http-venue-adapter.js';
import { intOption, sleep } from '../internal/options.js';
import { decimalString, parsePayload } from '../internal/parse-payload.js';
import type { FetchOptions, FileRef, FileSource, ListFilesOptions, VenueAdapterOptions } from '../types.js';
import type { HttpRequest, HttpResponse } from '../venue-http-client.js';
import { XetraFileList, XetraTradeRecord } from './xetra-schemas.js';

const gunzip = promisify(gunzipCb);

/** Deutsche Börse post-trade sources: Xetra, Börse Frankfurt, Tradegate, and the fourth published feed. */
export const XETRA_MARKETS = ['DETR', 'DFRA', 'DGAT', 'DEUR'] as const;

/** Even pacing across the markets (the connector's documented limit), for the `requests`, `periodMs` and `spacingMs` of {@link XETRA_DEFAULTS}. */
const PACE = { requests: VENUE_RATE_LIMIT_DEFAULTS.xetra!.limit, periodMs: VENUE_RATE_LIMIT_DEFAULTS.xetra!.periodMs };

/**
 * The defaults of {@link XetraAdapterOptions}, with the proactive-limiter design's figures
 * (docs/mock-venue.md, `proactive-rate-limiting.md`): 5 requests per 2 s across all markets, spaced
 * evenly 400 ms apart (150 a minute, ~12 minutes for 1,800 files), and after a 429 anyway retries 2 s,
 * 4 s and 8 s later before the venue is frozen.
 */
export const XETRA_DEFAULTS = Object.freeze({
  markets: XETRA_MARKETS as readonly string[],
  /** `paceRequests`. */
  requests: PACE.requests,
  /** `paceIntervalMs`. */
  periodMs: PACE.periodMs,
  pacing: 'even' as Pacing,
  /** `periodMs / requests`: the gap between two requests (any markets) under even pacing. */
  spacingMs: PACE.periodMs / PACE.requests,
  paceSlackMs: 50,
  /** Requests per call when the venue answers 429: the first and three retries. */
  maxAttempts: 4,
  backoffBaseMs: 2000,
  backoffMaxMs: 30_000,
  parseChunkLines: 500,
});

/**
 * The waits before each retry after a 429 without a longer `Retry-After`: `baseMs * 2^(n-1)` for
 * retry n, capped at `maxMs`, one fewer than `maxAttempts` (the last 429 is handed to the worker,
 * which freezes the venue). With the defaults: [2000, 4000, 8000].
 */
export function xetraBackoffMs(options: { maxAttempts?: number; backoffBaseMs?: number; backoffMaxMs?: number } = {}): number[] {
  const attempts = options.maxAttempts ?? XETRA_DEFAULTS.maxAttempts;
  const base = options.backoffBaseMs ?? XETRA_DEFAULTS.backoffBaseMs;
  const max = options.backoffMaxMs ?? XETRA_DEFAULTS.backoffMaxMs;
  return Array.from({ length: attempts - 1 }, (_, i) => Math.min(max, base * 2 ** i));
}

export interface XetraAdapterOptions extends VenueAdapterOptions {
  /** Markets whose files `listFiles` lists. @defaultValue XETRA_DEFAULTS.markets */
  markets?: readonly string[];
  /**
   * In-process pacing, one limiter across all markets (the service publishes no limit; the design
   * paces every download of the venue as one): `even` spaces requests `paceIntervalMs / paceRequests`
   * apart, `burst` allows `paceRequests` back to back in any rolling `paceIntervalMs`, `off` leaves
   * pacing to the caller's `beforeRequest` hook (the fleet's budget gate paces the venue fleet-wide,
   * each market within the venue's limit). @defaultValue XETRA_DEFAULTS.pacing
   */
  pacing?: Pacing | 'off';
  /** Requests allowed per `paceIntervalMs`, all markets together. @defaultValue XETRA_DEFAULTS.requests */
  paceRequests?: number;
  /** @defaultValue XETRA_DEFAULTS.periodMs */
  paceIntervalMs?: number;
  /**
   * Slack added to `paceIntervalMs`. Requests leave exactly one interval apart but arrive with jitter
   * (event loop, network), so without it the 6th request of a burst can land in the same venue window
   * as a late-arriving 1st one; measured against the emulation, that happened about once per 10 bursts.
   * @defaultValue XETRA_DEFAULTS.paceSlackMs
   */
  paceSlackMs?: number;
  /** Requests per call including the first, when the service answers 429. @defaultValue XETRA_DEFAULTS.maxAttempts */
  maxAttempts?: number;
  /** First backoff after a 429; doubles each attempt (Retry-After wins when longer). @defaultValue XETRA_DEFAULTS.backoffBaseMs */
  backoffBaseMs?: number;
  /** @defaultValue XETRA_DEFAULTS.backoffMaxMs */
  backoffMaxMs?: number;
  /** Told of every wait after a 429 before the request is retried (for logs and metrics). */
  onBackoff?: (info: { scope: string | undefined; attempt: number; waitMs: number }) => void;
  /**
   * NDJSON lines parsed (JSON.parse + validation, ~10 µs each) between yields to the event loop, so one
   * chunk holds the loop for about 5 ms. @defaultValue XETRA_DEFAULTS.parseChunkLines
   */
  parseChunkLines?: number;
}

/**
 * Deutsche Börse post-trade files (mfs.deutsche-boerse.com/api): `GET /{MARKET}-posttrade` lists a
 * market's minute files, `GET /download/{file}` returns one gzip of NDJSON trade records. ISINs are
 * the symbol in both forms.
 *
 * Pacing is proactive and venue-wide (the design's one limiter across all downloads): by default
 * requests leave evenly spaced, 5 per 2 s (+ slack) whichever market they are for, which the earlier
 * collector measured as 150 req/min, ~12 min for an 1800-file day with no 429s. Every request names
 * its market as the budget `scope`, so the fleet's gate spends it from that market's fleet-wide
 * budget and from the venue's aggregate over its markets. Exponential backoff on
 * 429 (2 s, 4 s, 8 s) is only the safety net, after which a RateLimitedError hands the wait to the
 * worker, which freezes the venue fleet-wide.
 */
export class XetraAdapter extends HttpVenueAdapter<'list' | 'download'> implements FileSource {
  readonly markets: readonly string[];
  /** The in-process pacer of all markets (created on first use; never with `pacing: 'off'`). */
  private venuePacer: PQueue | undefined;
  private readonly pacing: Pacing | 'off';
  private readonly paceRequests: number;
  private readonly paceWindowMs: number;
  private readonly maxAttempts: number;
  private readonly backoffBaseMs: number;
  private readonly backoffMaxMs: number;
  /** The wait before retry n (index n - 1): {@link xetraBackoffMs} of the options. */
  private readonly backoffs: readonly number[];
  private readonly parseChunkLines: number;
  private readonly onBackoff: XetraAdapterOptions['onBackoff'];

  constructor(options: XetraAdapterOptions) {
    const backoffBaseMs = intOption('backoffBaseMs', options.backoffBaseMs, XETRA_DEFAULTS.backoffBaseMs, 1, 600_000);
    super(options, { venue: 'xetra', weights: { list: 1, download: 1 }, limits: { errorPolicy: { rateLimitFallbackMs: backoffBaseMs } } });
    this.markets = marketCodes(options.markets ?? XETRA_DEFAULTS.markets);
    const pacing = options.pacing ?? XETRA_DEFAULTS.pacing;
    if (pacing !== 'even' && pacing !== 'burst' && pacing !== 'off') throw new ValidationError('pacing', 'even, burst or off', pacing);
    this.pacing = pacing;
    this.paceRequests = intOption('paceRequests', options.paceRequests, XETRA_DEFAULTS.requests, 1, 10_000);
    this.paceWindowMs =
      intOption('paceIntervalMs', options.paceIntervalMs, XETRA_DEFAULTS.periodMs, 1, 3_600_000) +
      intOption('paceSlackMs', options.paceSlackMs, XETRA_DEFAULTS.paceSlackMs, 0, 60_000);
    this.maxAttempts = intOption('maxAttempts', options.maxAttempts, XETRA_DEFAULTS.maxAttempts, 1, 20);
    this.backoffBaseMs = backoffBaseMs;
    this.backoffMaxMs = intOption('backoffMaxMs', options.backoffMaxMs, XETRA_DEFAULTS.backoffMaxMs, 1, 3_600_000);
    this.backoffs = xetraBackoffMs({ maxAttempts: this.maxAttempts, backoffBaseMs: this.backoffBaseMs, backoffMaxMs: this.backoffMaxMs });
    this.onBackoff = options.onBackoff;
    this.parseChunkLines = intOption('parseChunkLines', options.parseChunkLines, XETRA_DEFAULTS.parseChunkLines, 1, 1_000_000);
  }

  /** Files of `date` (UTC `YYYY-MM-DD`) across the configured markets, sorted by market then minute. */
  async listFiles(date: string, options: ListFilesOptions = {}): Promise<FileRef[]> {
    if (!/^\d{4}-\d{2}-\d{2}$/.test(date) || !Number.isFinite(Date.parse(`${date}T00:00:00Z`))) {
      throw new ValidationError('date', 'a date YYYY-MM-DD', date);
    }
    const markets = options.markets ? marketCodes(options.markets) : this.markets;
    const out: FileRef[] = [];
    for (const market of markets) {
      const { data: list } = await this.getJson('list', this.url(`/${market}-posttrade`), XetraFileList, { signal: options.signal, scope: market });
      const prefix = `${market}-posttrade-${date}T`;
      for (const name of list.CurrentFiles) {
        if (!name.startsWith(prefix)) continue;
        const m = /T(\d{2})_(\d{2})/.exec(name.slice(prefix.length - 1));
        out.push({
          name,
          market,
          date,
          ...(m ? { minuteMs: Date.parse(`${date}T${m[1]}:${m[2]}:00Z`) } : {}),
        });
      }
    }
    return out.sort((a, b) => markets.indexOf(a.market) - markets.indexOf(b.market) || a.name.localeCompare(b.name));
  }

  /** Downloads one file, gunzips it off the event loop (zlib thread pool) and parses it in chunks. */
  async fetchFile(ref: FileRef, options: FetchOptions = {}): Promise<{ trades: Trade[]; envelopes: Envelope[]; bytes: number }> {
    const res = await this.get('download', this.url(`/download/${encodeURIComponent(ref.name)}`), { signal: options.signal, scope: ref.market });
    let text: string;
    try {
      text = (await gunzip(res.body)).toString('utf8');
    } catch (err) {
      throw new MalformedPayloadError(this.venue, `${ref.name} is not a gzip file`, res.body.subarray(0, 64).toString('latin1'), { cause: err });
    }
    const trades: Trade[] = [];
    const envelopes: Envelope[] = [];
    const add = (record: XetraTradeRecord): void => {
      const trade = this.toTrade(ref, record);
      trades.push(trade);
      envelopes.push(tradeEnvelope(trade, `xetra:${ref.market}:${trade.tradeId}`, res.receivedAtMs, record));
    };
    const trimmed = text.trimStart();
    if (trimmed.startsWith('[')) {
      // A file holding one JSON array is accepted too.
      const records = parsePayload(this.venue, `download ${ref.name}`, trimmed, XetraTradeRecord.array());
      for (let i = 0; i < records.length; i++) {
        add(records[i]!);
        if ((i + 1) % this.parseChunkLines === 0) await yieldToLoop();
      }
      return { trades, envelopes, bytes: res.body.length };
    }
    // NDJSON, one record per line. Parsing, validation and envelope building run in chunks: big days
    // hold hundreds of thousands of records, and other units' I/O must keep flowing meanwhile.
    let start = 0;
    let lineNo = 0;
    while (start < text.length) {
      let end = text.indexOf('\n', start);
      if (end === -1) end = text.length;
      const line = text.slice(start, end).trim();
      start = end + 1;
      lineNo++;
      if (line) add(parsePayload(this.venue, `download ${ref.name} line ${lineNo}`, line, XetraTradeRecord));
      if (lineNo % this.parseChunkLines === 0) await yieldToLoop();
    }
    return { trades, envelopes, bytes: res.body.length };
  }

  /**
   * The venue's in-process pacer, shared by every market. Even: one request per `(paceIntervalMs + paceSlackMs) / requests`
   * (410 ms at the defaults); burst: `requests` per rolling window plus slack (PQueue's strict mode).
   */
  private pacer(): PQueue | undefined {
    if (this.pacing === 'off') return undefined;
    this.venuePacer ??=
      this.pacing === 'even'
        ? new PQueue({ intervalCap: 1, interval: Math.ceil(this.paceWindowMs / this.paceRequests), strict: true })
        : new PQueue({ intervalCap: this.paceRequests, interval: this.paceWindowMs, strict: true });
    return this.venuePacer;
  }

  private toTrade(ref: FileRef, record: XetraTradeRecord): Trade {
    const tradeId =
      record.transIdCode ??
      (record.tradeId === undefined ? undefined : String(record.tradeId)) ??
      (record.tickId === undefined ? undefined : String(record.tickId));
    if (!tradeId) throw new MalformedPayloadError(this.venue, `${ref.name} record has no transIdCode, tradeId or tickId`, record);
    const timeMs = parseIsoNs(record.lastTradeTime);
    if (timeMs === undefined) throw new MalformedPayloadError(this.venue, `${ref.name} record has an unreadable lastTradeTime`, record);
    return {
      venue: this.venue,
      symbol: record.isin,
      tradeId,
      timeMs,
      price: decimalString(record.lastTrade),
      size: decimalString(record.lastQty),
      ...(record.currency ? { currency: record.currency } : {}),
    };
  }

  /** Every request paced venue-wide, with bounded exponential backoff on 429; each attempt passes the budget hooks again. */
  protected override async send(req: HttpRequest): Promise<HttpResponse> {
    const pacer = this.pacer();
    for (let attempt = 1; ; attempt++) {
      try {
        if (!pacer) return await super.send(req);
        return await pacer.add(() => super.send(req), req.signal ? { signal: req.signal } : {});
      } catch (err) {
        if (!(err instanceof RateLimitedError)) throw err;
        if (attempt >= this.maxAttempts) {
          // Handed to the worker, which freezes the venue fleet-wide: until the venue's Retry-After
          // when it gave one, else for the connector's freeze (escalated on repeats).
          const waitMs = Math.max(this.backoffBaseMs, err.retryAtMs - this.clock.now());
          throw new RateLimitedError(this.venue, this.clock.now() + waitMs, `${this.venue} still rate limited after ${attempt} attempts`, {
            cause: err,
            fromVenue: err.fromVenue,
          });
        }
        const waitMs = Math.max(this.backoffs[attempt - 1] ?? this.backoffMaxMs, err.retryAtMs - this.clock.now());
        this.onBackoff?.({ scope: req.scope, attempt, waitMs });
        await sleep(waitMs, req.signal);
      }
    }
  }
}

/** `markets`, each checked to be a four-letter market code such as DETR. */
function marketCodes(markets: readonly string[]): readonly string[] {
  for (const m of markets) if (!/^[A-Z]{4}$/.test(m)) throw new ValidationError('markets', 'four-letter market codes such as DETR', m);
  return markets;
}

function yieldToLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** `2025-10-31T13:54:00.042457058Z` -> epoch ms (sub-millisecond digits dropped, not rounded). */
function parseIsoNs(text: string): number | undefined {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:?\d{2})$/.exec(text);
  if (!m) return undefined;
  const ms = Date.parse(`${m[1]}.${(m[2] ?? '').padEnd(3, '0').slice(0, 3)}${m[3]}`);
  return Number.isFinite(ms) ? ms : undefined;
}
