import { type Command } from 'commander';
import { jsonOption, printJson, printTable } from '../output.js';

interface VenueRow {
  venue: string;
  /** `native` (a hand-written adapter) or `ccxt`. */
  engine: 'native' | 'ccxt';
  /** The CCXT exchange id, on the CCXT engine. */
  exchange?: string;
  jobs: string[];
}

/**
 * The built-in venues with their engine and job types, then every CCXT exchange as the `ccxt-<id>`
 * venue that serves it, with the job types the engine runs there. Loads the adapters and `ccxt`
 * (about a second): only this command pays for it.
 */
async function venueRows(withCcxt: boolean): Promise<{ venues: VenueRow[]; ccxt: VenueRow[] }> {
  const { ADAPTER_VENUES, CcxtAdapter, CCXT_VENUE_PREFIX, ccxtExchangeJobs, createVenueAdapter, supportedJobTypes } = await import('@tickfleet/venues');
  const venues = ADAPTER_VENUES.map((venue): VenueRow => {
    const adapter = createVenueAdapter(venue, { baseUrl: 'http://127.0.0.1' });
    const ccxt = adapter instanceof CcxtAdapter;
    return { venue, engine: ccxt ? 'ccxt' : 'native', ...(ccxt ? { exchange: adapter.exchangeId } : {}), jobs: supportedJobTypes(adapter) };
  });
  const ccxt = withCcxt
    ? (await ccxtExchangeJobs()).map(({ exchange, jobs }): VenueRow => ({ venue: `${CCXT_VENUE_PREFIX}${exchange}`, engine: 'ccxt', exchange, jobs }))
    : [];
  return { venues, ccxt };
}

export function registerVenues(program: Command): void {
  program
    .command('venues')
    .description('the venues tickfleet serves: built-in ones with their engine and job types, then every CCXT exchange as ccxt-<id>')
    .option('--no-ccxt', 'only the built-in venues (does not load ccxt)')
    .addOption(jsonOption())
    .action(async (opts: { json?: boolean; ccxt: boolean }) => {
      const rows = await venueRows(opts.ccxt);
      if (opts.json) return printJson(rows);
      printTable(
        ['VENUE', 'ENGINE', 'JOBS'],
        rows.venues.map((r) => [r.venue, r.exchange ? `ccxt (${r.exchange})` : r.engine, r.jobs.join(', ')]),
      );
      if (rows.ccxt.length === 0) return;
      process.stdout.write(`\nCCXT exchanges (${rows.ccxt.length}), each served as the venue ccxt-<id>:\n`);
      printTable(
        ['VENUE', 'JOBS'],
        rows.ccxt.map((r) => [r.venue, r.jobs.join(', ') || '-']),
      );
    });
}
