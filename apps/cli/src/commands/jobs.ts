import { type Command } from 'commander';
import {
  type Job,
  JOB_TYPES,
  JobSymbol,
  type JobType,
  parseJobId,
  parseOrThrow,
  calendarFor,
  SESSION_DAY_VENUES,
  sessionDayVenueOf,
  type Timeframe,
  TIMEFRAMES,
  UNIVERSE_JOB_TYPES,
  universeKey,
  universeOf,
  ValidationError,
  VenueName,
  DEFAULT_UNIVERSE_PER_CYCLE,
} from '@tickfleet/core';
import { ADAPTER_VENUES, createVenueAdapter, hasVenueAdapter, isSeriesSource, isTradeSource, supportedJobTypes } from '@tickfleet/venues';
import { integer, isoDate, oneOf } from '../args.js';
import { isoOrDash, jsonOption, printJson, printTable } from '../output.js';
import { withStore } from '../store-context.js';
import { assertVenueSymbol } from '../venue-symbols.js';

interface AddOptions {
  timeframe?: Timeframe;
  since?: number;
  priority?: number;
  perCycle?: number;
  json?: boolean;
}

export function registerJobs(program: Command): void {
  const jobs = program.command('jobs').description('standing collection jobs: (venue, type, symbol, timeframe)');

  jobs
    .command('add <venue> <type> <symbol>')
    .description(`add or update a job; type is one of ${JOB_TYPES.join(', ')}; symbol @<name> covers a universe (tickfleet universes set); prints the job id`)
    .option('--timeframe <tf>', `candle timeframe (${TIMEFRAMES.join(' ')}); required for ohlcv`, oneOf('--timeframe', TIMEFRAMES))
    .option('--since <iso>', 'collect from this date (UTC), e.g. 2024-01-01', isoDate('--since'))
    .option('--priority <n>', 'higher runs first (default 0)', integer('--priority'))
    .option(
      '--per-cycle <n>',
      `universe jobs: members refreshed per cycle, round-robin (default ${DEFAULT_UNIVERSE_PER_CYCLE}, at most 1000)`,
      integer('--per-cycle'),
    )
    .addOption(jsonOption('print the job as JSON'))
    .action(async (venue: string, type: string, symbol: string, opts: AddOptions, cmd: Command) => {
      const name = parseOrThrow(VenueName, venue, 'venue');
      const jobType = oneOf<JobType>('type', JOB_TYPES)(type);
      const sym = parseOrThrow(JobSymbol, symbol, 'symbol');
      const universe = universeOf(sym);
      if (jobType === 'ohlcv' && universe === null) assertVenueSymbol(name, sym);
      if (jobType === 'ohlcv' && opts.timeframe === undefined) throw new ValidationError('--timeframe', 'a timeframe for ohlcv jobs, e.g. --timeframe 1m');
      // Observation dates are days; a timeframe would only make a second id for the same series.
      if (jobType === 'series' && opts.timeframe !== undefined) throw new ValidationError('--timeframe', 'no timeframe for series jobs', opts.timeframe);
      if (opts.priority !== undefined && Math.abs(opts.priority) > 1000) throw new ValidationError('--priority', 'an integer in -1000..1000', opts.priority);
      if (opts.perCycle !== undefined && universe === null) throw new ValidationError('--per-cycle', 'a job over a universe (symbol @<name>)', opts.perCycle);
      if (opts.perCycle !== undefined && (opts.perCycle < 1 || opts.perCycle > 1000))
        throw new ValidationError('--per-cycle', 'an integer in 1..1000', opts.perCycle);
      const job = await withStore(cmd, async (store) => {
        const connector = await store.connectors.get(name);
        if (!connector) {
          throw new ValidationError('venue', `an existing connector (create it with tickfleet connectors upsert ${name} …)`, name);
        }
        if (universe !== null) {
          if (!(await store.universes.get(name, universe))) {
            throw new ValidationError(
              'symbol',
              `an existing universe (create it with tickfleet universes set ${name} ${universe} <symbols...>)`,
              universeKey(name, universe),
            );
          }
          // per-day candle jobs collect a universe too: Alpaca's day and minute bars in units over the
          // whole universe (many symbols per request), Polygon's day bars in slices of a few members
          const perDay = sessionDayVenueOf({ venue: name, type: jobType, timeframe: opts.timeframe ?? null }) !== undefined;
          if (!UNIVERSE_JOB_TYPES.includes(jobType) && !perDay) {
            const types = UNIVERSE_JOB_TYPES.length > 0 ? UNIVERSE_JOB_TYPES.join(', ') : 'no job type of this version';
            throw new ValidationError(
              'symbol',
              `one symbol for ${jobType} jobs (a universe is collected by ${types}, by alpaca ohlcv 1d/1m jobs and by polygon ohlcv 1d jobs)`,
              sym,
            );
          }
        }
        assertSupported(name, connector.baseUrl, jobType, sym, opts.timeframe);
        return store.jobs.upsert({
          venue: name,
          type: jobType,
          symbol: sym,
          timeframe: opts.timeframe ?? null,
          ...(opts.since !== undefined ? { since: opts.since } : {}),
          ...(opts.priority !== undefined ? { priority: opts.priority } : {}),
          ...(opts.perCycle !== undefined ? { perCycle: opts.perCycle } : {}),
        });
      });
      if (opts.json) printJson(job);
      else process.stdout.write(`${job.id}\n`);
    });

  jobs
    .command('list')
    .description('list jobs')
    .option('--venue <venue>', 'only this venue')
    .addOption(jsonOption())
    .action(async (opts: { venue?: string; json?: boolean }, cmd: Command) => {
      const venue = opts.venue === undefined ? undefined : parseOrThrow(VenueName, opts.venue, '--venue');
      const list = await withStore(cmd, (store) => store.jobs.list(venue ? { venue } : {}));
      if (opts.json) printJson(list);
      else printJobs(list);
    });

  jobs
    .command('show <id>')
    .description('show one job')
    .addOption(jsonOption())
    .action(async (id: string, opts: { json?: boolean }, cmd: Command) => {
      const job = await withStore(cmd, (store) => getJob(store.jobs, id));
      if (opts.json) printJson(job);
      else printJobs([job]);
    });

  for (const [verb, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    jobs
      .command(`${verb} <id>`)
      .description(`${verb} a job`)
      .addOption(jsonOption())
      .action(async (id: string, opts: { json?: boolean }, cmd: Command) => {
        const job = await withStore(cmd, async (store) => {
          await getJob(store.jobs, id);
          return store.jobs.setEnabled(id, enabled);
        });
        if (opts.json) printJson(job);
        else printJobs([job]);
      });
  }
}

/** Candle timeframes a venue's adapter serves when not every one is (Alpaca: its per-day day and minute bars). */
const VENUE_TIMEFRAMES: Readonly<Record<string, readonly Timeframe[]>> = { alpaca: SESSION_DAY_VENUES.alpaca!.timeframes };

/**
 * A job type the venue's adapter can collect (`trades`: venues with a public trades endpoint); a
 * series job's symbol must name series the venue publishes (FRED: a series id or `treasury-curve`).
 */
function assertSupported(venue: string, baseUrl: string, type: JobType, symbol: string, timeframe: Timeframe | undefined): void {
  if (!hasVenueAdapter(venue)) throw new ValidationError('venue', `a venue with an adapter (${ADAPTER_VENUES.join(', ')})`, venue);
  const adapter = createVenueAdapter(venue, { baseUrl });
  const supported = supportedJobTypes(adapter);
  if (!supported.includes(type)) throw new ValidationError('type', `a job type ${venue} supports (${supported.join(', ')})`, type);
  if (type === 'series' && isSeriesSource(adapter)) adapter.seriesOf(symbol);
  if (type !== 'ohlcv' || timeframe === undefined) return;
  const allowed = VENUE_TIMEFRAMES[venue];
  if (allowed && !allowed.includes(timeframe)) throw new ValidationError('--timeframe', `a timeframe ${venue} collects (${allowed.join(', ')})`, timeframe);
  // Weekly bars of US equities have no grid on the trading calendar (Polygon's weeks start on a New York Sunday).
  if (calendarFor(venue).name === 'us-equity' && timeframe === '1w')
    throw new ValidationError('--timeframe', `a timeframe up to 1d for ${venue} (US-equity sessions)`, timeframe);
}

/** What a venue's trades job cursor holds: a trade id where the venue pages trades by id (Binance, Coinbase), else a time. */
function tradeCursorOf(venue: string): 'id' | 'time' {
  if (!hasVenueAdapter(venue)) return 'time';
  const adapter = createVenueAdapter(venue, { baseUrl: 'http://127.0.0.1' });
  return isTradeSource(adapter) ? adapter.tradeCursor : 'time';
}

async function getJob(repo: { get(id: string): Promise<Job | null> }, id: string): Promise<Job> {
  parseJobId(id);
  const job = await repo.get(id);
  if (!job) throw new ValidationError('job id', 'an existing job (see tickfleet jobs list)', id);
  return job;
}

function printJobs(list: Job[]): void {
  const now = Date.now();
  printTable(
    ['ID', 'ENABLED', 'PRIORITY', 'NEXT RUN', 'LEASED UNTIL', 'CURSOR', 'RUNS', 'FAILURES', 'LAST ERROR'],
    list.map((j) => [
      j.id,
      j.enabled ? 'yes' : 'no',
      j.priority,
      isoOrDash(j.nextRunAt || null),
      // Claimed by the scheduler, its unit not ended: not claimed again before then.
      isoOrDash(j.lockedUntil !== null && j.lockedUntil > now ? j.lockedUntil : null),
      // An options job's cursor over a universe is its round-robin position, not a time; a sliced
      // per-day universe job shows the last member stored of the day it is collecting.
      universeOf(j.symbol) === null || j.type !== 'options'
        ? j.cursor !== null && j.type === 'trades' && tradeCursorOf(j.venue) === 'id'
          ? `trade id ${j.cursor}`
          : `${isoOrDash(j.cursor)}${j.memberCursor === null ? '' : ` +${j.memberCursor}`}`
        : `slot ${j.cursor ?? 0}`,
      j.stats.runs,
      j.stats.failures,
      j.stats.lastError,
    ]),
  );
}
