/**
 * Throughput of the venue emulation on cheap endpoints, against a bare node:http server answering a
 * constant in the same run (the ceiling of this machine with this load generator).
 *
 *   node --import tsx scripts/bench/mock-venue.ts [--seconds 5] [--rounds 3] [--generators 1] [--concurrency 64]
 *
 * Servers run in this process; load comes from separate generator processes (this file re-run with
 * `--generate`), each keeping `concurrency` keep-alive requests in flight for the whole window.
 */
import { spawn } from 'node:child_process';
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { startMockVenue } from '@tickfleet/mock-venue';

interface GeneratorResult {
  requests: number;
  byStatus: Record<string, number>;
  errors: number;
}

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  return Number.isFinite(v) && v > 0 ? v : fallback;
}

/** Generator mode: hammer `url` for `durationMs` with `concurrency` in-flight requests; print one JSON result line. */
async function generate(url: string, durationMs: number, concurrency: number): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const target = new URL(url);
  const result: GeneratorResult = { requests: 0, byStatus: {}, errors: 0 };
  const deadline = Date.now() + durationMs;
  const once = (): Promise<void> =>
    new Promise((resolve) => {
      const req = request({ host: target.hostname, port: target.port, path: `${target.pathname}${target.search}`, agent }, (res) => {
        res.on('data', () => undefined);
        res.on('end', () => {
          result.requests += 1;
          const key = String(res.statusCode);
          result.byStatus[key] = (result.byStatus[key] ?? 0) + 1;
          resolve();
        });
      });
      req.on('error', () => {
        result.errors += 1;
        resolve();
      });
      req.end();
    });
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < deadline) await once();
    }),
  );
  agent.destroy();
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

function runGenerator(url: string, durationMs: number, concurrency: number): Promise<GeneratorResult> {
  const child = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), '--generate', url, String(durationMs), String(concurrency)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve(JSON.parse(out.trim()) as GeneratorResult) : reject(new Error(`generator exited ${code}`))));
  });
}

async function measure(
  url: string,
  seconds: number,
  generators: number,
  concurrency: number,
): Promise<{ rps: number; byStatus: Record<string, number>; errors: number }> {
  // each generator counts only inside its own window, so process start-up is not in the figure
  const results = await Promise.all(Array.from({ length: generators }, () => runGenerator(url, seconds * 1000, concurrency)));
  const byStatus: Record<string, number> = {};
  let requests = 0;
  let errors = 0;
  for (const r of results) {
    requests += r.requests;
    errors += r.errors;
    for (const [k, v] of Object.entries(r.byStatus)) byStatus[k] = (byStatus[k] ?? 0) + v;
  }
  return { rps: requests / seconds, byStatus, errors };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

async function main(): Promise<void> {
  const seconds = arg('seconds', 5);
  const generators = arg('generators', 1);
  const concurrency = arg('concurrency', 64);
  const rounds = arg('rounds', 3);

  const body = '{"status":"ok"}';
  const baseline = createServer({ keepAlive: true }, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
    res.end(body);
  });
  await new Promise<void>((r) => baseline.listen(0, '127.0.0.1', r));
  const baselineUrl = `http://127.0.0.1:${(baseline.address() as AddressInfo).port}/`;
  // limits off: the benchmark measures serving cost, not 429s
  const mv = await startMockVenue({
    scenario: { venues: { binance: { limit: { enabled: false } }, polymarket: { limit: { enabled: false } } } },
  });
  const token = JSON.parse(
    ((await (await fetch(`${mv.baseUrl('polymarket')}/markets?limit=1`)).json()) as Array<{ clobTokenIds: string }>)[0]!.clobTokenIds,
  )[0] as string;

  const targets: Array<[string, string]> = [
    ['/_mock/health', `${mv.url}/_mock/health`],
    ['/binance/api/v3/klines?limit=1', `${mv.baseUrl('binance')}/api/v3/klines?symbol=BTCUSDT&interval=1m&limit=1`],
    ['/binance/api/v3/depth?limit=5', `${mv.baseUrl('binance')}/api/v3/depth?symbol=BTCUSDT&limit=5`],
    ['/polymarket/book', `${mv.baseUrl('polymarket')}/book?token_id=${token}`],
  ];
  // warm-up (JIT, sockets) so the first measured target is not penalised
  await measure(baselineUrl, 1, generators, concurrency);
  await measure(targets[1]![1], 1, generators, concurrency);

  // The machine may be shared (other processes stealing CPU), so every target is measured right after
  // its own baseline, `rounds` times, and the median of the paired ratios is reported.
  console.log(
    `mock-venue throughput: ${rounds} rounds x (${seconds} s baseline + ${seconds} s target), ${generators} generator process(es) x ${concurrency} keep-alive requests in flight`,
  );
  console.log('| target | requests/s (median) | baseline requests/s (median) | ratio to baseline (median) | statuses |');
  console.log('| --- | ---: | ---: | ---: | --- |');
  for (const [name, url] of targets) {
    const rps: number[] = [];
    const base: number[] = [];
    const ratios: number[] = [];
    const byStatus: Record<string, number> = {};
    let errors = 0;
    for (let i = 0; i < rounds; i++) {
      const b = await measure(baselineUrl, seconds, generators, concurrency);
      const t = await measure(url, seconds, generators, concurrency);
      base.push(b.rps);
      rps.push(t.rps);
      ratios.push(t.rps / b.rps);
      errors += t.errors;
      for (const [k, v] of Object.entries(t.byStatus)) byStatus[k] = (byStatus[k] ?? 0) + v;
    }
    const statuses =
      Object.entries(byStatus)
        .map(([k, v]) => `${k}: ${v}`)
        .join(', ') + (errors ? `, errors: ${errors}` : '');
    console.log(`| ${name} | ${Math.round(median(rps))} | ${Math.round(median(base))} | ${median(ratios).toFixed(2)} | ${statuses} |`);
  }
  await mv.stop();
  await new Promise<void>((r) => baseline.close(() => r()));
}

if (process.argv[2] === '--generate') {
  await generate(process.argv[3] ?? '', Number(process.argv[4]), Number(process.argv[5]));
} else {
  await main();
}
