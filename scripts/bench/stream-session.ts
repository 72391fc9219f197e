/**
 * What a Binance stream session costs over a bare `ws` client, in one run against the same emulation:
 * a ManualClock is moved ahead as fast as the client keeps up (ten emulated seconds per step), first
 * for a bare client that only parses each message, then for a BinanceStreamSession (trade-id checks,
 * local order books, envelopes, a pipeline that only counts). No sink: this is the session's share of
 * an end-to-end ingest, not the ingest.
 *
 *   node --import tsx scripts/bench/stream-session.ts [--seconds 5] [--symbols 10]
 */
import { WebSocket } from 'ws';
import { DEFAULT_BINANCE_SYMBOLS, startMockVenue, type MockVenue } from '@tickfleet/mock-venue';
import { ManualClock } from '@tickfleet/testkit';
import { BinanceStreamSession } from '@tickfleet/streams';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  return Number.isFinite(v) && v > 0 ? v : fallback;
}

const seconds = arg('seconds', 5);
const STEP_MS = 10_000;
const T0 = Date.UTC(2024, 0, 15, 8);
const pairs = DEFAULT_BINANCE_SYMBOLS.slice(0, Math.min(arg('symbols', 10), DEFAULT_BINANCE_SYMBOLS.length));

/** Steps the clock for `seconds` of real time, each step once `drained()` says the client has caught up. */
async function drive(mv: MockVenue, clock: ManualClock, drained: () => boolean): Promise<{ messages: number; elapsedS: number; emulatedS: number }> {
  const sentBefore = mv.stats().streams.binance.messagesSent;
  const clockBefore = clock.now();
  const started = performance.now();
  const deadline = started + seconds * 1000;
  while (performance.now() < deadline) {
    const due = mv.stats().streams.binance.messagesSent;
    clock.advance(STEP_MS);
    while (mv.stats().streams.binance.messagesSent === due || !drained()) await new Promise((r) => setTimeout(r, 1));
  }
  return {
    messages: mv.stats().streams.binance.messagesSent - sentBefore,
    elapsedS: (performance.now() - started) / 1000,
    emulatedS: (clock.now() - clockBefore) / 1000,
  };
}

async function bare(): Promise<{ messages: number; elapsedS: number; emulatedS: number }> {
  const clock = new ManualClock(T0);
  const mv = await startMockVenue({ clock });
  const names = pairs.flatMap((p) => [`${p.replace('/', '').toLowerCase()}@trade`, `${p.replace('/', '').toLowerCase()}@depth@100ms`]);
  const ws = new WebSocket(`${mv.url.replace('http://', 'ws://')}/binance/stream?streams=${names.join('/')}`);
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  let received = 0;
  ws.on('message', (data: Buffer) => {
    JSON.parse(data.toString('utf8'));
    received += 1;
  });
  const result = await drive(mv, clock, () => received >= mv.stats().streams.binance.messagesSent);
  ws.terminate();
  await mv.stop();
  return result;
}

async function session(): Promise<{ messages: number; elapsedS: number; emulatedS: number; records: number }> {
  const clock = new ManualClock(T0);
  const mv = await startMockVenue({ clock });
  let records = 0;
  const s = new BinanceStreamSession({
    wsBaseUrl: `${mv.url.replace('http://', 'ws://')}/binance`,
    restBaseUrl: mv.baseUrl('binance'),
    symbols: pairs,
    channels: ['trades', 'book'],
    clock,
    // a ten-second clock step must not read as silence
    silenceTimeoutMs: 3_600_000,
    onRecords: async (envs) => {
      records += envs.length;
    },
  });
  await s.start();
  while (mv.stats().streams.binance.openConnections === 0) await new Promise((r) => setTimeout(r, 5));
  const result = await drive(mv, clock, () => s.stats().messages >= mv.stats().streams.binance.messagesSent && s.stats().state === 'live');
  await s.stop();
  await mv.stop();
  return { ...result, records };
}

const b = await bare();
const s = await session();
const rate = (r: { messages: number; elapsedS: number }): number => Math.round(r.messages / r.elapsedS);
console.log(
  `Binance stream session vs bare ws client: ${pairs.length} symbols x (trade + depth@100ms), one combined connection, ${seconds} s each\n` +
    `| client | messages/s | emulated seconds per second | records/s |\n| --- | ---: | ---: | ---: |\n` +
    `| bare ws, JSON.parse only | ${rate(b)} | ${(b.emulatedS / b.elapsedS).toFixed(0)} | - |\n` +
    `| BinanceStreamSession | ${rate(s)} | ${(s.emulatedS / s.elapsedS).toFixed(0)} | ${Math.round(s.records / s.elapsedS)} |\n` +
    `session / bare: ${(rate(s) / rate(b)).toFixed(2)}`,
);
