import { type Command } from 'commander';
import {
  type Connector,
  type ConnectorInput,
  BOOK_LOOP_DEFAULTS,
  DEFAULT_BOOK_COOLDOWN,
  DEFAULT_MAX_INFLIGHT,
  DEFAULT_RATE_LIMIT_PERIOD_MS,
  FREEZE_DEFAULTS,
  PACED_VENUES,
  PACINGS,
  RATE_LIMIT_POLICIES,
  type RateLimitPolicyName,
  type Pacing,
  effectiveLimit,
  formatDurationMs,
  parseOrThrow,
  ValidationError,
  VenueName,
  VENUE_RATE_LIMIT_DEFAULTS,
} from '@tickfleet/core';
import type { ConnectorJobCounts } from '@tickfleet/store';
import { aimdSettings, type AimdPatch, duration, fraction, httpUrl, oneOf, positiveInt } from '../args.js';
import { isoOrDash, jsonOption, printJson, printTable } from '../output.js';
import { withStore } from '../store-context.js';

interface UpsertOptions {
  baseUrl?: string;
  limit?: number;
  period?: number;
  policy?: RateLimitPolicyName;
  headroom?: number;
  maxInflight?: number;
  freeze?: number;
  freezeMax?: number;
  freezeReset?: number;
  aimd?: AimdPatch;
  cooldownRatio?: number;
  cooldownMinPolls?: number;
  cooldownWindow?: number;
  cooldown?: number;
  pacing?: Pacing;
  /** A cadence turns the loop on; false (`--no-book-loop`) off. */
  bookLoop?: number | false;
  bookLoopShares?: number;
  bookLoopDepth?: number;
  json?: boolean;
}

export function registerConnectors(program: Command): void {
  const connectors = program.command('connectors').description('venue connectors: base URL, rate-limit policy, status');

  connectors
    .command('upsert <venue>')
    .description('create a connector, or update the given fields of an existing one')
    .option('--base-url <url>', 'venue API base URL (required on create)', httpUrl('--base-url'))
    .option(
      '--limit <n>',
      `weight the venue allows per period (required on create, except for a venue with a documented limit: ${documentedLimits()})`,
      positiveInt('--limit'),
    )
    .option(
      '--period <duration>',
      `rate-limit period, e.g. 60s (default on create: the venue's documented period, else ${formatDurationMs(DEFAULT_RATE_LIMIT_PERIOD_MS)})`,
      duration('--period'),
    )
    .option(
      '--policy <policy>',
      `${RATE_LIMIT_POLICIES.join(' | ')} (default on create: the venue's documented policy, else fixed-window)`,
      oneOf('--policy', RATE_LIMIT_POLICIES),
    )
    .option('--headroom <fraction>', 'share of the limit to spend (default 0.95 on create)', fraction('--headroom'))
    .option(
      '--max-inflight <n>',
      `fleet-wide in-flight units (default on create: per venue, polygon 1, alpaca/finnhub/fred/limitless 2, others ${DEFAULT_MAX_INFLIGHT})`,
      positiveInt('--max-inflight'),
    )
    .option(
      '--freeze <duration>',
      `fleet-wide freeze after a 429 without Retry-After, before escalation; also how long a job waits after its unit failed for good (default ${formatDurationMs(FREEZE_DEFAULTS.freezeMs)})`,
      duration('--freeze'),
    )
    .option(
      '--freeze-max <duration>',
      `cap of the freeze escalation after repeated 429s (default ${formatDurationMs(FREEZE_DEFAULTS.freezeMaxMs)})`,
      duration('--freeze-max'),
    )
    .option('--freeze-reset <duration>', 'clean period after a freeze that resets the escalation (default: the --freeze length)', duration('--freeze-reset'))
    .option(
      '--aimd <settings>',
      'adaptive concurrency (docs/architecture.md, venue control), e.g. min=1,max=8,interval=30s,stable=30s,max-failure-ratio=0.2,p95-low=2s,p95-high=10s,start=floor,restart-after=60s; given keys change, others stay',
      aimdSettings('--aimd'),
    )
    .option(
      '--cooldown-ratio <fraction>',
      `order books: share of failed polls in one window that cools the venue down (default ${DEFAULT_BOOK_COOLDOWN.failureRatio})`,
      fraction('--cooldown-ratio'),
    )
    .option(
      '--cooldown-min-polls <n>',
      `order books: polls a window needs before it can cool the venue down (default ${DEFAULT_BOOK_COOLDOWN.minPolls})`,
      positiveInt('--cooldown-min-polls'),
    )
    .option(
      '--cooldown-window <duration>',
      `order books: the window failures are counted in, one polling interval (default ${formatDurationMs(DEFAULT_BOOK_COOLDOWN.windowMs)})`,
      duration('--cooldown-window'),
    )
    .option(
      '--cooldown <duration>',
      `order books: how long the venue's book polls pause once cooled down (default ${formatDurationMs(DEFAULT_BOOK_COOLDOWN.cooldownMs)})`,
      duration('--cooldown'),
    )
    .option(
      '--pacing <pacing>',
      "venues budgeted per market (xetra): even spaces each market's requests period/limit apart, burst allows the limit back to back (default even)",
      oneOf('--pacing', PACINGS),
    )
    .option(
      '--book-loop <cadence>',
      `order books: poll the venue's active instruments by a leased loop every <cadence>, in batches, instead of one unit per poll (docs/order-books.md; e.g. ${formatDurationMs(BOOK_LOOP_DEFAULTS.cadenceMs)})`,
      duration('--book-loop'),
    )
    .option('--no-book-loop', 'order books: back to one unit per poll')
    .option(
      '--book-loop-shares <n>',
      `order books: leased shares the loop's instruments are split into (default ${BOOK_LOOP_DEFAULTS.shares})`,
      positiveInt('--book-loop-shares'),
    )
    .option(
      '--book-loop-depth <n>',
      "order books: levels per side the loop asks for, where the venue's adapter takes a depth (binance at 1: top of book, many symbols per ticker/bookTicker request)",
      positiveInt('--book-loop-depth'),
    )
    .addOption(jsonOption('print the connector as JSON'))
    .action(async (venue: string, opts: UpsertOptions, cmd: Command) => {
      const name = parseOrThrow(VenueName, venue, 'venue');
      if (opts.pacing !== undefined && !PACED_VENUES.includes(name)) {
        throw new ValidationError('--pacing', `a venue budgeted per market (${PACED_VENUES.join(', ')})`, name);
      }
      const saved = await withStore(cmd, async (store) => {
        const existing = await store.connectors.get(name);
        const documented = VENUE_RATE_LIMIT_DEFAULTS[name];
        if (!existing) {
          if (opts.baseUrl === undefined) throw new ValidationError('--base-url', `a base URL to create connector ${name}`);
          if (opts.limit === undefined && !documented) throw new ValidationError('--limit', `a weight limit to create connector ${name}`);
        }
        // A new connector without --policy or --headroom gets the RateLimit schema's defaults.
        const policy = opts.policy ?? existing?.rateLimit.policy ?? documented?.policy;
        const headroom = opts.headroom ?? existing?.rateLimit.headroom ?? documented?.headroom;
        const input: ConnectorInput = {
          ...(existing ?? {}),
          venue: name,
          baseUrl: opts.baseUrl ?? existing!.baseUrl,
          rateLimit: {
            ...(policy !== undefined ? { policy } : {}),
            limit: opts.limit ?? existing?.rateLimit.limit ?? documented!.limit,
            periodMs: opts.period ?? existing?.rateLimit.periodMs ?? documented?.periodMs ?? DEFAULT_RATE_LIMIT_PERIOD_MS,
            ...(headroom !== undefined ? { headroom } : {}),
          },
          ...(opts.maxInflight !== undefined ? { maxInflight: opts.maxInflight } : {}),
          ...(opts.freeze !== undefined ? { freezeMs: opts.freeze } : {}),
          ...(opts.freezeMax !== undefined ? { freezeMaxMs: opts.freezeMax } : {}),
          ...(opts.freezeReset !== undefined ? { freezeResetMs: opts.freezeReset } : {}),
          ...(opts.aimd !== undefined ? { aimd: { ...(existing?.aimd ?? {}), ...opts.aimd } as ConnectorInput['aimd'] } : {}),
          ...(opts.cooldownRatio !== undefined || opts.cooldownMinPolls !== undefined || opts.cooldownWindow !== undefined || opts.cooldown !== undefined
            ? {
                bookCooldown: {
                  ...(existing?.bookCooldown ?? DEFAULT_BOOK_COOLDOWN),
                  ...(opts.cooldownRatio !== undefined ? { failureRatio: opts.cooldownRatio } : {}),
                  ...(opts.cooldownMinPolls !== undefined ? { minPolls: opts.cooldownMinPolls } : {}),
                  ...(opts.cooldownWindow !== undefined ? { windowMs: opts.cooldownWindow } : {}),
                  ...(opts.cooldown !== undefined ? { cooldownMs: opts.cooldown } : {}),
                },
              }
            : {}),
          ...(opts.pacing !== undefined ? { pacing: opts.pacing } : {}),
          ...bookLoopInput(opts, existing?.bookLoop),
        };
        return store.connectors.upsert(input);
      });
      if (opts.json) printJson(saved);
      else printConnectors([saved]);
    });

  connectors
    .command('list')
    .description('list connectors')
    .addOption(jsonOption())
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const all = await withStore(cmd, async (store) => withJobCounts(await store.connectors.list(), await store.jobs.countsByVenue()));
      if (opts.json) printJson(all);
      else printConnectorsWithJobs(all);
    });

  connectors
    .command('show <venue>')
    .description('show one connector')
    .addOption(jsonOption())
    .action(async (venue: string, opts: { json?: boolean }, cmd: Command) => {
      const name = parseOrThrow(VenueName, venue, 'venue');
      const found = await withStore(cmd, async (store) => {
        const connector = await store.connectors.get(name);
        return connector ? withJobCounts([connector], await store.jobs.countsByVenue())[0] : undefined;
      });
      if (!found) throw new ValidationError('venue', `an existing connector (see tickfleet connectors list)`, name);
      if (opts.json) printJson(found);
      else printConnectorsWithJobs([found]);
    });

  for (const [verb, status] of [
    ['pause', 'paused'],
    ['resume', 'active'],
    ['disable', 'disabled'],
  ] as const) {
    connectors
      .command(`${verb} <venue>`)
      .description(`${verb} a venue fleet-wide (status ${status})`)
      .addOption(jsonOption())
      .action(async (venue: string, opts: { json?: boolean }, cmd: Command) => {
        const name = parseOrThrow(VenueName, venue, 'venue');
        const saved = await withStore(cmd, async (store) => {
          if (!(await store.connectors.get(name))) throw new ValidationError('venue', 'an existing connector (see tickfleet connectors list)', name);
          return store.connectors.setStatus(name, status);
        });
        if (opts.json) printJson(saved);
        else printConnectors([saved]);
      });
  }
}

/** The venues with a documented limit, as the help shows them: `xetra 5/2s`. */
function documentedLimits(): string {
  return Object.entries(VENUE_RATE_LIMIT_DEFAULTS)
    .map(([venue, { limit, periodMs }]) => `${venue} ${limit}/${formatDurationMs(periodMs)}`)
    .join(', ');
}

/** A connector with what its jobs say (the connector design's `jobs_count`, `active_jobs_count`, `last_job_run_time`). */
type ConnectorWithJobs = Connector & Omit<ConnectorJobCounts, 'venue'>;

/** Each connector with its jobs counted: derived from the jobs at read time, so never out of step with them. */
function withJobCounts(list: Connector[], counts: readonly ConnectorJobCounts[]): ConnectorWithJobs[] {
  const byVenue = new Map(counts.map((c) => [c.venue, c]));
  return list.map((c) => {
    const n = byVenue.get(c.venue);
    return { ...c, jobsCount: n?.jobsCount ?? 0, activeJobsCount: n?.activeJobsCount ?? 0, lastJobRunAt: n?.lastJobRunAt ?? null };
  });
}

const CONNECTOR_COLUMNS = ['VENUE', 'STATUS', 'POLICY', 'LIMIT', 'EFFECTIVE', 'PERIOD', 'INFLIGHT', 'PACING', 'BASE URL'];

function connectorCells(c: Connector): Array<string | number> {
  return [
    c.venue,
    c.status,
    c.rateLimit.policy,
    c.rateLimit.limit,
    effectiveLimit(c.rateLimit),
    formatDurationMs(c.rateLimit.periodMs),
    c.maxInflight,
    c.pacing ?? '-',
    c.baseUrl,
  ];
}

function printConnectors(list: Connector[]): void {
  printTable(CONNECTOR_COLUMNS, list.map(connectorCells));
}

/** `list` and `show`: the connector's columns, then its jobs (enabled/all) and when one last ran. */
function printConnectorsWithJobs(list: ConnectorWithJobs[]): void {
  printTable(
    [...CONNECTOR_COLUMNS, 'JOBS', 'LAST JOB RUN'],
    list.map((c) => [...connectorCells(c), `${c.activeJobsCount}/${c.jobsCount}`, isoOrDash(c.lastJobRunAt)]),
  );
}

/** The connector's `bookLoop` from the flags: on with a cadence, off with `--no-book-loop`, shares changed on a running loop; nothing when none was given. */
function bookLoopInput(opts: UpsertOptions, existing: Connector['bookLoop']): Pick<ConnectorInput, 'bookLoop'> {
  if (opts.bookLoop === false) {
    if (opts.bookLoopShares !== undefined) throw new ValidationError('--book-loop-shares', 'shares of a loop that is on (not with --no-book-loop)');
    if (opts.bookLoopDepth !== undefined) throw new ValidationError('--book-loop-depth', 'the depth of a loop that is on (not with --no-book-loop)');
    return { bookLoop: null };
  }
  if (opts.bookLoop === undefined && opts.bookLoopShares === undefined && opts.bookLoopDepth === undefined) return {};
  const cadenceMs = opts.bookLoop ?? existing?.cadenceMs;
  if (cadenceMs === undefined) throw new ValidationError('--book-loop', 'a cadence to turn the book loop on (e.g. --book-loop 1s)');
  const depth = opts.bookLoopDepth ?? existing?.depth;
  return { bookLoop: { cadenceMs, shares: opts.bookLoopShares ?? existing?.shares ?? BOOK_LOOP_DEFAULTS.shares, ...(depth !== undefined ? { depth } : {}) } };
}
