/**
 * Xetra file parsing: wall time and the longest event-loop stall while one big post-trade file is
 * downloaded and parsed, for the adapter (async gunzip on the zlib thread pool, NDJSON parsed in
 * chunks with zod validation) against a baseline measured in the same run (gunzipSync + split +
 * JSON.parse in one synchronous go, no validation). Figures are ratios to the baseline.
 *
 *   node --import tsx scripts/bench/xetra-parse.ts [records=200000]
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync, gzipSync } from 'node:zlib';
import { XetraAdapter } from '@tickfleet/venues';

const records = Number(process.argv[2] ?? 200_000);
const template = {
  messageId: 'posttrade',
  sourceName: 'ETR',
  isin: 'DE0007100000',
  currency: 'EUR',
  tickActionIndicator: 'I',
  instrumentIdCode: 'I',
  mmtMarketMechanism: '8',
  mmtTradingMode: '2',
  mmtAlgoInd: 'H',
  quotationType: 1,
  lastQty: 159.0,
  lastTrade: 56.2,
  lastTradeTime: '2025-10-31T13:54:00.042457058Z',
  distributionDateTime: '2025-10-31T13:54:00.052903000Z',
  tickId: 0,
  instrumentId: 'DE0007100000',
  transIdCode: '',
  executionVenueId: 'XETA',
};
const ndjson = Array.from({ length: records }, (_, i) => JSON.stringify({ ...template, tickId: i, transIdCode: String(1e15 + i) })).join('\n');
const gz = gzipSync(ndjson);

const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(gz));
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

async function measure(run: () => Promise<number>): Promise<{ ms: number; maxStallMs: number; count: number }> {
  // A 5 ms ticker: the longest gap between two ticks is the longest time the loop was held.
  let last = performance.now();
  let maxGap = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    maxGap = Math.max(maxGap, now - last);
    last = now;
  }, 5);
  const t0 = performance.now();
  const count = await run();
  const ms = performance.now() - t0;
  // let the ticker fire once more, so a stall at the very end is recorded too
  await new Promise((resolve) => setTimeout(resolve, 20));
  clearInterval(ticker);
  return { ms, maxStallMs: maxGap, count };
}

async function baseline(): Promise<number> {
  const res = await fetch(`${url}/download/x.json.gz`);
  const text = gunzipSync(Buffer.from(await res.arrayBuffer())).toString('utf8');
  return text.split('\n').map((l) => JSON.parse(l) as unknown).length;
}

const adapter = new XetraAdapter({ baseUrl: url, paceRequests: 1000 });
async function viaAdapter(): Promise<number> {
  return (await adapter.fetchFile({ name: 'x.json.gz', market: 'DETR', date: '2025-10-31' })).trades.length;
}

await baseline(); // warm up both paths
await viaAdapter();
const rounds = 3;
const base: Array<Awaited<ReturnType<typeof measure>>> = [];
const adap: Array<Awaited<ReturnType<typeof measure>>> = [];
for (let i = 0; i < rounds; i++) {
  base.push(await measure(baseline));
  adap.push(await measure(viaAdapter));
}
server.close();
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const bMs = median(base.map((r) => r.ms));
const aMs = median(adap.map((r) => r.ms));
const bStall = median(base.map((r) => r.maxStallMs));
const aStall = median(adap.map((r) => r.maxStallMs));
console.log(`xetra parse, ${records} records (${(gz.length / 1e6).toFixed(1)} MB gzip, ${(ndjson.length / 1e6).toFixed(1)} MB NDJSON), median of ${rounds}`);
console.log(`  wall time       adapter/baseline = ${(aMs / bMs).toFixed(2)}x   (baseline ${bMs.toFixed(0)} ms, adapter ${aMs.toFixed(0)} ms)`);
console.log(`  max loop stall  adapter/baseline = ${(aStall / bStall).toFixed(2)}x   (baseline ${bStall.toFixed(0)} ms, adapter ${aStall.toFixed(0)} ms)`);
if (adap.some((r) => r.count !== records) || base.some((r) => r.count !== records)) throw new Error('record count mismatch');
