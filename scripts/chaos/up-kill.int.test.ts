import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { isRunning, runCli, spawnCli, tempDir, waitFor, type TempDir } from '@tickfleet/testkit';

/**
 * Chaos: `tickfleet up --demo` killed with SIGKILL (no chance to stop its children). Every process
 * it started — scheduler, workers, redis-server and its watchdog — must go away by itself: the
 * roles notice their parent is gone and shut down as on SIGTERM, the watchdog then stops
 * redis-server. The emulations and the dashboard run inside `up` and die with it.
 */

interface FleetFile {
  redisUrl: string;
  dashboardUrl: string;
  mockVenueUrl: string;
  rolePids: Record<string, number>;
  redisPid: number;
}

/** pid -> parent pid of every live (non-zombie) process, from /proc. */
function processTable(): Map<number, number> {
  const table = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // "pid (comm) state ppid …": comm may hold spaces and parentheses, so split after the last ')'.
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (state !== 'Z') table.set(Number(name), Number(ppid));
    } catch {
      // exited while listing
    }
  }
  return table;
}

function descendants(root: number): number[] {
  const table = processTable();
  const out: number[] = [];
  const walk = (pid: number): void => {
    for (const [child, parent] of table) {
      if (parent === pid) {
        out.push(child);
        walk(child);
      }
    }
  };
  walk(root);
  return out;
}

function portOpen(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const s = createConnection({ host: hostname, port: Number(port) });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

describe('chaos: tickfleet up killed with SIGKILL', () => {
  let dir: TempDir;
  beforeAll(() => {
    dir = tempDir('tickfleet-up-kill-');
  });
  afterAll(() => dir.remove());

  it('leaves no process of the fleet behind, and closes Redis', async () => {
    const up = spawnCli(['up', '--demo', '--workers', '2', '--dashboard-port', '0'], {
      cwd: dir.path,
      env: { REDIS_URL: undefined, TICKFLEET_STORE_URL: undefined, TICKFLEET_SINK_URL: undefined, TICKFLEET_PREFIX: undefined, LOG_LEVEL: 'info' },
    });
    let out = '';
    up.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    up.stderr?.on('data', (d: Buffer) => (out += d.toString()));
    let fleetPids: number[] = [];
    try {
      await waitFor(() => out.includes('tickfleet is up') || up.exitCode !== null, 'tickfleet is up', { timeoutMs: 90_000 });
      expect(out).toContain('tickfleet is up');
      const fleet = JSON.parse(readFileSync(join(dir.path, '.tickfleet/fleet.json'), 'utf8')) as FleetFile;
      expect(Object.keys(fleet.rolePids).sort()).toEqual(['scheduler', 'worker-0', 'worker-1']);

      // Data flows: candles of the demo's binance job reach the sink.
      const count = async (): Promise<number> => {
        const r = await runCli(['data', 'count', 'binance', 'BTC/USDT', '--timeframe', '1m', '--json'], {
          cwd: dir.path,
          env: { TICKFLEET_SINK_URL: undefined },
        });
        return r.code === 0 ? (JSON.parse(r.stdout) as { count: number }).count : 0;
      };
      await waitFor(async () => (await count()) >= 300, 'demo candles in the sink', { timeoutMs: 90_000, intervalMs: 1000 });

      // Everything `up` started, from the process tree (roles, redis-server, the watchdog) and
      // from what it recorded in fleet.json.
      fleetPids = [...new Set([...descendants(up.pid!), ...Object.values(fleet.rolePids), fleet.redisPid])];
      for (const pid of [...Object.values(fleet.rolePids), fleet.redisPid]) expect(fleetPids).toContain(pid);
      expect(fleetPids.length).toBeGreaterThanOrEqual(5);

      up.kill('SIGKILL');
      const table = (): Map<number, number> => processTable();
      // Roles stop as on SIGTERM (in-flight units finish or are returned), then the watchdog stops
      // Redis; the wait is generous for a loaded machine, the state is what is asserted.
      await waitFor(() => fleetPids.every((pid) => !table().has(pid)), `no fleet process left (alive: ${fleetPids.filter((p) => table().has(p)).join(', ')})`, {
        timeoutMs: 150_000,
        intervalMs: 500,
      });
      expect(await portOpen(fleet.redisUrl)).toBe(false);
      expect(await portOpen(fleet.dashboardUrl)).toBe(false);
      expect(await portOpen(fleet.mockVenueUrl)).toBe(false);
      // Each role said why it stopped, and stopped cleanly rather than being killed.
      for (const name of Object.keys(fleet.rolePids)) {
        const log = readFileSync(join(dir.path, `.tickfleet/logs/${name}.log`), 'utf8');
        expect([name, log.includes(`tickfleet up (pid ${up.pid}) is gone; stopping`)]).toEqual([name, true]);
        expect([name, log.includes('stopped cleanly')]).toEqual([name, true]);
      }
      // A later command does not mistake the dead fleet for a running one.
      expect(existsSync(join(dir.path, '.tickfleet/fleet.json'))).toBe(true);
      const status = await runCli(['queues'], { cwd: dir.path, env: { REDIS_URL: undefined } });
      expect(status.code).toBe(2);
      expect(status.stderr).toMatch(/invalid configuration REDIS_URL/);
    } finally {
      if (isRunning(up)) up.kill('SIGKILL');
      for (const pid of fleetPids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone, as it should be
        }
      }
    }
  }, 400_000);
});
