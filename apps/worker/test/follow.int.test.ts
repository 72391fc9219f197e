import { spawn } from 'node:child_process';
import { cliPath } from '@tickfleet/testkit';
import { FleetHarness } from '@tickfleet/testkit/fleet';

const DAY = 86_400_000;

/** `tickfleet backfill --follow` on a terminal draws a progress bar with rate and ETA until the backfill is done. */
describe('tickfleet backfill --follow', () => {
  let fleet: FleetHarness;
  beforeAll(async () => {
    fleet = await FleetHarness.start({ venues: { binance: { latencyMs: 50 } } });
  });
  afterAll(() => fleet.stop());

  it('shows progress, rate and ETA on a TTY and ends with the result', async () => {
    await fleet.upsertConnector('binance', '--limit', '100000', '--period', '10s', '--max-inflight', '2');
    const worker = fleet.spawn('worker', ['worker']);
    await fleet.ready(worker);
    const to = Math.floor(Date.now() / DAY) * DAY - DAY;
    const args = [
      '--store',
      fleet.storeUrl,
      'backfill',
      'binance',
      'BTC/USDT',
      '--timeframe',
      '1m',
      '--from',
      new Date(to - 30 * DAY).toISOString(),
      '--to',
      new Date(to).toISOString(),
      '--follow',
    ];
    const command = [process.execPath, cliPath(), ...args].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
    // util-linux `script` gives the CLI a pseudo-terminal, as a person's shell would.
    const child = spawn('script', ['-qec', command, '/dev/null'], {
      env: { ...process.env, ...fleet.env(), NODE_OPTIONS: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((r) => child.once('exit', r));
    expect({ code, out: code === 0 ? '' : out }).toEqual({ code: 0, out: '' });
    const frames = out
      .split('\r')
      .map((f) => f.replaceAll('\u001b[K', '').trim())
      .filter((f) => f.startsWith('['));
    expect(frames.length).toBeGreaterThan(2);
    expect(frames[frames.length - 1]).toMatch(/^\[#{30}\] 100\.0% 44\/44 units \d+\.\d\/s ETA /);
    expect(frames.some((f) => /\d+\.\d\/s ETA \d/.test(f))).toBe(true);
    expect(out).toMatch(/bf-[0-9a-f]{8}: done, 44\/44 units/);
    await fleet.stopCleanly(worker);
  }, 120_000);
});
