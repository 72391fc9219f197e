/**
 * CCXT engine against the hand-written Binance adapter: the same Binance emulation (its limit off, in
 * a child `tickfleet mock-venue` process so this process's CPU is the adapter's alone), the same
 * backfill of DAYS days of BTC/USDT 1m candles in pages of 1,000 (one unit's work per page), rounds
 * interleaved and their order alternated, after one discarded warm-up round of each (JIT), one adapter
 * per engine for every round. Prints pages/s and CPU ms per page of each, and the median ratio
 * CCXT / native of each round.
 *
 *   node --import tsx scripts/bench/ccxt-engine.ts [--days 20] [--rounds 9]
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BinanceAdapter, CcxtAdapter, type CandleSource } from '@tickfleet/venues';

const args = process.argv.slice(2);
const arg = (name: string, fallback: number): number => {
  const i = args.indexOf(`--${name}`);
  const v = i >= 0 ? Number(args[i + 1]) : NaN;
  return Number.isFinite(v) && v > 0 ? v : fallback;
};
const DAYS = arg('days', 20);
const ROUNDS = arg('rounds', 9);
const DAY = 86_400_000;

interface Run {
  pagesPerS: number;
  cpuMsPerPage: number;
  candles: number;
}

async function startEmulation(): Promise<{ url: string; stop: () => void }> {
  const scenario = join(tmpdir(), `ccxt-bench-${process.pid}.json`);
  writeFileSync(scenario, JSON.stringify({ venues: { binance: { limit: { enabled: false } } } }));
  const child = spawn(process.execPath, ['apps/cli/bin/tickfleet.mjs', 'mock-venue', '--port', '0', '--scenario', scenario], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve) => createInterface({ input: child.stdout }).once('line', resolve));
  return { url: (JSON.parse(line) as { url: string }).url, stop: () => child.kill('SIGTERM') };
}

/** One backfill through `adapter` after one untimed page (connections open). */
async function backfill(adapter: CandleSource, to: number): Promise<Run> {
  for await (const _ of adapter.fetchCandles('BTC/USDT', '1m', to - DAY, to - DAY + 60_000)) break;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let pages = 0;
  let candles = 0;
  for await (const page of adapter.fetchCandles('BTC/USDT', '1m', to - DAYS * DAY, to)) {
    pages += 1;
    candles += page.candles.length;
  }
  const wallS = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return { pagesPerS: pages / wallS, cpuMsPerPage: (cpu.user + cpu.system) / 1000 / pages, candles };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const emu = await startEmulation();
try {
  const baseUrl = `${emu.url}/binance`;
  const to = Math.floor(Date.now() / DAY) * DAY - DAY;
  const runs: Record<'native' | 'ccxt', Run[]> = { native: [], ccxt: [] };
  // One adapter per engine for every round, as a worker keeps one per venue (CCXT's markets load once).
  const adapters: Record<'native' | 'ccxt', CandleSource> = {
    native: new BinanceAdapter({ baseUrl }),
    ccxt: new CcxtAdapter('ccxt-binance', { baseUrl, exchange: 'binance', maxCandlesPerPage: 1000, exchangeOptions: { fetchMarkets: { types: ['spot'] } } }),
  };
  for (let round = -1; round < ROUNDS; round++) {
    const order = round % 2 !== 0 ? (['native', 'ccxt'] as const) : (['ccxt', 'native'] as const);
    for (const engine of order) {
      const run = await backfill(adapters[engine], to);
      if (run.candles !== DAYS * 1440) throw new Error(`${engine} stored ${run.candles} candles, not ${DAYS * 1440}`);
      if (round >= 0) runs[engine].push(run);
      console.log(`round ${round < 0 ? 'warm-up' : round + 1} ${engine}: ${run.pagesPerS.toFixed(1)} pages/s, ${run.cpuMsPerPage.toFixed(2)} CPU ms/page`);
    }
  }
  const ratio = runs.ccxt.map((c, i) => c.pagesPerS / runs.native[i]!.pagesPerS);
  const cpuRatio = runs.ccxt.map((c, i) => c.cpuMsPerPage / runs.native[i]!.cpuMsPerPage);
  console.log(
    JSON.stringify({
      days: DAYS,
      rounds: ROUNDS,
      native: { pagesPerS: median(runs.native.map((r) => r.pagesPerS)), cpuMsPerPage: median(runs.native.map((r) => r.cpuMsPerPage)) },
      ccxt: { pagesPerS: median(runs.ccxt.map((r) => r.pagesPerS)), cpuMsPerPage: median(runs.ccxt.map((r) => r.cpuMsPerPage)) },
      ratio: { median: median(ratio), min: Math.min(...ratio), max: Math.max(...ratio) },
      cpuRatio: median(cpuRatio),
    }),
  );
} finally {
  emu.stop();
}
