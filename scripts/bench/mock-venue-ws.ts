/**
 * How fast the WebSocket emulation can feed one client: a ManualClock is moved ahead as fast as the
 * client keeps up, so the emulation publishes flat out (tape computation, faults bookkeeping, framing)
 * and a bare `ws` client parses every message. This is the ceiling a streaming-ingest benchmark can be
 * driven at from the emulation on this machine.
 *
 *   node --import tsx scripts/bench/mock-venue-ws.ts [--seconds 5] [--symbols 10]
 */
import { WebSocket } from 'ws';
import { DEFAULT_BINANCE_SYMBOLS, startMockVenue } from '@tickfleet/mock-venue';
import { ManualClock } from '@tickfleet/testkit';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  return Number.isFinite(v) && v > 0 ? v : fallback;
}

const seconds = arg('seconds', 5);
const STEP_MS = 10_000;
const symbolCount = Math.min(arg('symbols', 10), DEFAULT_BINANCE_SYMBOLS.length);
const clock = new ManualClock(Date.UTC(2024, 0, 15, 8));
const mv = await startMockVenue({ clock });
const names = DEFAULT_BINANCE_SYMBOLS.slice(0, symbolCount).flatMap((p) => {
  const s = p.replace('/', '').toLowerCase();
  return [`${s}@trade`, `${s}@depth@100ms`];
});
const ws = new WebSocket(`${mv.url.replace('http://', 'ws://')}/binance/stream?streams=${names.join('/')}`);
await new Promise((resolve, reject) => {
  ws.once('open', resolve);
  ws.once('error', reject);
});
let received = 0;
let bytes = 0;
ws.on('message', (data: Buffer) => {
  bytes += data.length;
  JSON.parse(data.toString('utf8'));
  received += 1;
});
const started = performance.now();
const deadline = started + seconds * 1000;
// ten emulated seconds per step (the hub polls the clock every 20 ms), the next step only once the client has drained the previous one
while (performance.now() < deadline) {
  const due = mv.stats().streams.binance.messagesSent;
  clock.advance(STEP_MS);
  while (mv.stats().streams.binance.messagesSent === due || received < mv.stats().streams.binance.messagesSent) {
    await new Promise((r) => setTimeout(r, 1));
  }
}
const elapsedS = (performance.now() - started) / 1000;
ws.terminate();
await mv.stop();
console.log(
  `mock-venue WebSocket feed: ${symbolCount} symbols x (trade + depth@100ms) on one combined connection, ${elapsedS.toFixed(1)} s\n` +
    `| messages/s | MB/s | emulated seconds per second |\n| ---: | ---: | ---: |\n` +
    `| ${Math.round(received / elapsedS)} | ${(bytes / 1e6 / elapsedS).toFixed(1)} | ${((clock.now() - Date.UTC(2024, 0, 15, 8)) / 1000 / elapsedS).toFixed(0)} |`,
);
