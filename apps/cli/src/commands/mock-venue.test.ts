import { writeFileSync } from 'node:fs';
import { runCli, spawnCli, tempDir, type TempDir } from '@tickfleet/testkit';

/** Resolves with the first stdout line of the child. */
function firstLine(child: ReturnType<typeof spawnCli>): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve(out.slice(0, nl));
    });
    child.once('exit', (code) => reject(new Error(`mock-venue exited ${code} before listening: ${err}`)));
  });
}

describe('tickfleet mock-venue', () => {
  let dir: TempDir;
  beforeEach(() => {
    dir = tempDir();
  });
  afterEach(() => dir.remove());

  test('prints one JSON line with the base URLs, serves the scenario, stops cleanly on SIGTERM', async () => {
    const scenarioFile = dir.file('scenario.json');
    writeFileSync(scenarioFile, JSON.stringify({ seed: 5, venues: { binance: { limit: { weight: 4, windowMs: 60_000 } } } }));
    const child = spawnCli(['mock-venue', '--port', '0', '--scenario', scenarioFile]);
    try {
      const ready = JSON.parse(await firstLine(child)) as { url: string; venues: Record<string, string> };
      expect(ready.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(ready.venues).toEqual({
        alpaca: `${ready.url}/alpaca`,
        binance: `${ready.url}/binance`,
        coinbase: `${ready.url}/coinbase`,
        finnhub: `${ready.url}/finnhub`,
        fred: `${ready.url}/fred`,
        kraken: `${ready.url}/kraken`,
        limitless: `${ready.url}/limitless`,
        polygon: `${ready.url}/polygon`,
        polymarket: `${ready.url}/polymarket`,
        xetra: `${ready.url}/xetra`,
      });
      expect((await fetch(`${ready.url}/_mock/health`)).status).toBe(200);
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) statuses.push((await fetch(`${ready.venues.binance}/api/v3/ping`)).status);
      const stats = (await (await fetch(`${ready.url}/_mock/stats`)).json()) as { venues: { binance: { limit: number; requests: number } } };
      expect(stats.venues.binance).toMatchObject({ limit: 4, requests: 3 });
      const scenario = (await (await fetch(`${ready.url}/_mock/scenario`)).json()) as { seed: number };
      expect(scenario.seed).toBe(5);
      // ping weighs 1: three fit in the 4-weight window
      expect(statuses.every((s) => s === 200)).toBe(true);
    } finally {
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    }
  });

  test('a bad --port exits 2 naming the argument', async () => {
    const r = await runCli(['mock-venue', '--port', 'eighty']);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('--port');
  });

  test('a bad scenario file exits 2 naming --scenario and the bad field', async () => {
    const missing = await runCli(['mock-venue', '--port', '0', '--scenario', dir.file('nope.json')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('--scenario');
    const badFile = dir.file('bad.json');
    writeFileSync(badFile, JSON.stringify({ venues: { binance: { errorRate: 3 } } }));
    const bad = await runCli(['mock-venue', '--port', '0', '--scenario', badFile]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--scenario');
    expect(bad.stderr).toContain('venues.binance.errorRate');
    const notJson = dir.file('x.json');
    writeFileSync(notJson, '{oops');
    const nj = await runCli(['mock-venue', '--port', '0', '--scenario', notJson]);
    expect(nj.code).toBe(2);
    expect(nj.stderr).toContain('valid JSON');
  });
});
