import { runCli } from '@tickfleet/testkit';

interface Row {
  venue: string;
  engine: string;
  exchange?: string;
  jobs: string[];
}

describe('tickfleet venues', () => {
  it('lists the built-in venues with their engine and jobs, then every CCXT exchange with what the engine runs there', async () => {
    const r = await runCli(['venues', '--json']);
    expect(r.code).toBe(0);
    const { venues, ccxt } = JSON.parse(r.stdout) as { venues: Row[]; ccxt: Row[] };
    expect(venues.map((v) => [v.venue, v.engine, v.exchange ?? null])).toEqual([
      ['alpaca', 'native', null],
      ['binance', 'native', null],
      ['coinbase', 'ccxt', 'coinbaseexchange'],
      ['finnhub', 'native', null],
      ['fred', 'native', null],
      ['kraken', 'ccxt', 'kraken'],
      ['limitless', 'native', null],
      ['polygon', 'native', null],
      ['polymarket', 'native', null],
      ['xetra', 'native', null],
    ]);
    expect(venues.find((v) => v.venue === 'kraken')!.jobs).toContain('ohlcv');
    expect(venues.find((v) => v.venue === 'fred')!.jobs).toEqual(['series']);
    expect(ccxt.length).toBeGreaterThan(90);
    // The same jobs as the built-in venue on the same exchange.
    expect(ccxt.find((c) => c.exchange === 'kraken')).toEqual({
      venue: 'ccxt-kraken',
      engine: 'ccxt',
      exchange: 'kraken',
      jobs: venues.find((v) => v.venue === 'kraken')!.jobs,
    });
    expect(
      ccxt.every((c) => c.venue === `ccxt-${c.exchange}` && c.jobs.every((j) => j === 'ohlcv' || j === 'trades' || j === 'book' || j === 'discovery')),
    ).toBe(true);
    expect(venues.find((v) => v.venue === 'kraken')!.jobs).toEqual(['ohlcv', 'trades', 'book', 'discovery']);
    expect(venues.find((v) => v.venue === 'binance')!.jobs).toEqual(['ohlcv', 'trades', 'book', 'discovery']);
    expect(venues.find((v) => v.venue === 'polymarket')!.jobs).not.toContain('trades');

    const table = await runCli(['venues', '--no-ccxt']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^kraken\s+ccxt \(kraken\)\s+ohlcv, trades, book, discovery$/m);
    expect(table.stdout).not.toContain('ccxt-');
  }, 60_000);
});
