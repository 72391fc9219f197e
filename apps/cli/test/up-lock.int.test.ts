import type { ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, spawnCli, tempDir, waitFor, type TempDir } from '@tickfleet/testkit';
import { pidAlive } from '../src/fleet-context.js';

/**
 * One `tickfleet up` per directory (a second one is refused before it starts or writes anything,
 * and a dead one's lock does not block the next), a restarted fleet that does not wait out the
 * dead fleet's scheduler leases, and role logs that are rotated and capped.
 */

interface FleetFile {
  pid: number;
  dashboardUrl: string;
  mockVenueUrl: string;
  redisPid?: number;
  rolePids: Record<string, number>;
}

interface JobJson {
  id: string;
  venue: string;
  lockedUntil: number | null;
  stats: { runs: number };
}

interface Up {
  proc: ChildProcess;
  out: () => string;
  exited: Promise<number | null>;
}

/** Scheduler leases far longer than any wait here: a job whose lease is not ended for it never runs again within a test. */
const LONG_LEASE = '1h';

function startUp(dir: TempDir, args: string[] = [], env: Record<string, string | undefined> = {}): Up {
  const proc = spawnCli(['up', '--demo', '--workers', '1', '--dashboard-port', '0', ...args], {
    cwd: dir.path,
    env: { REDIS_URL: undefined, TICKFLEET_STORE_URL: undefined, TICKFLEET_SINK_URL: undefined, LOG_LEVEL: 'info', ...env },
  });
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
  return { proc, out: () => out, exited };
}

async function waitUp(up: Up): Promise<void> {
  await waitFor(() => up.out().includes('tickfleet is up') || up.proc.exitCode !== null, 'tickfleet is up', { timeoutMs: 90_000 });
  if (!up.out().includes('tickfleet is up')) throw new Error(`tickfleet up exited: ${up.out()}`);
}

async function stopUp(up: Up): Promise<number | null> {
  if (up.proc.exitCode !== null || up.proc.signalCode !== null) return up.proc.exitCode;
  up.proc.kill('SIGINT');
  return up.exited;
}

const cliIn = (dir: TempDir, args: string[]) =>
  runCli(args, { cwd: dir.path, env: { REDIS_URL: undefined, TICKFLEET_STORE_URL: undefined, TICKFLEET_SINK_URL: undefined } });

async function jobs(dir: TempDir): Promise<JobJson[]> {
  const r = await cliIn(dir, ['jobs', 'list', '--json']);
  if (r.code !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout) as JobJson[];
}

async function emulationRequests(fleet: FleetFile): Promise<Record<string, number>> {
  const stats = (await (await fetch(`${fleet.mockVenueUrl}/_mock/stats`)).json()) as { venues: Record<string, { requests: number }> };
  return Object.fromEntries(Object.entries(stats.venues).map(([venue, s]) => [venue, s.requests]));
}

const total = (byVenue: Record<string, number>): number => Object.values(byVenue).reduce((a, b) => a + b, 0);

/** Processes whose command line names `needle` (read from /proc), by pid. */
function processesNaming(needle: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (
        readFileSync(`/proc/${entry}/cmdline`, 'utf8')
          .split('\0')
          .some((arg) => arg.includes(needle))
      )
        pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** The redis-servers working in `dir` (each runs in its `--dir`; it rewrites its command line). */
function redisServersIn(dir: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        return readFileSync(`/proc/${entry}/comm`, 'utf8').startsWith('redis-server') && readlinkSync(`/proc/${entry}/cwd`) === dir;
      } catch {
        return false; // gone meanwhile, or not ours to read
      }
    })
    .map(Number);
}

function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

describe('tickfleet up: one per directory', () => {
  let dir: TempDir;
  const ups: Up[] = [];
  beforeEach(() => {
    dir = tempDir('tickfleet-up-lock-');
  });
  afterEach(async () => {
    for (const up of ups.splice(0)) {
      if (up.proc.exitCode === null && up.proc.signalCode === null) {
        up.proc.kill('SIGINT');
        await Promise.race([up.exited, new Promise((r) => setTimeout(r, 45_000))]);
        if (up.proc.exitCode === null) up.proc.kill('SIGKILL');
      }
    }
    dir.remove();
  }, 60_000);

  it('lets one of two ups started at once through and refuses another while it runs, leaving the running fleet untouched', async () => {
    const both = [startUp(dir), startUp(dir)];
    ups.push(...both);
    await waitFor(
      () => both.some((u) => u.out().includes('tickfleet is up')) && both.some((u) => u.proc.exitCode !== null),
      'one up running, the other refused',
      {
        timeoutMs: 90_000,
      },
    );
    const first = both.find((u) => u.out().includes('tickfleet is up'))!;
    const refusedAtStart = both.find((u) => u !== first)!;
    expect(await refusedAtStart.exited).toBe(1);
    const fleetText = readFileSync(join(dir.path, '.tickfleet/fleet.json'), 'utf8');
    const fleet = JSON.parse(fleetText) as FleetFile;
    expect(fleet.pid).toBe(first.proc.pid);
    // One line, naming the running up; refused while that one was starting, or after.
    expect(refusedAtStart.out()).toMatch(
      new RegExp(
        `^tickfleet: another \`tickfleet up\` runs in this directory \\(pid ${fleet.pid}, dashboard (not up yet|${fleet.dashboardUrl})\\): stop it first.*\\n$`,
      ),
    );

    const redisServers = (): number[] => redisServersIn(join(dir.path, '.tickfleet'));
    expect(redisServers()).toEqual([fleet.redisPid]);
    const logsBefore = readdirSync(join(dir.path, '.tickfleet/logs')).sort();
    await waitFor(async () => total(await emulationRequests(fleet)) > 0, 'the first fleet fetching from its emulation', { timeoutMs: 60_000 });

    // A second `up` while the first runs: refused with the running one's pid and dashboard, nothing started or written.
    const second = await runCli(['up', '--demo', '--workers', '1', '--dashboard-port', '0'], {
      cwd: dir.path,
      env: { REDIS_URL: undefined, TICKFLEET_STORE_URL: undefined, TICKFLEET_SINK_URL: undefined, LOG_LEVEL: 'info' },
    });
    expect(second.code).toBe(1);
    expect(second.stdout).toBe('');
    expect(second.stderr).toBe(
      `tickfleet: another \`tickfleet up\` runs in this directory (pid ${fleet.pid}, dashboard ${fleet.dashboardUrl}): stop it first (Ctrl-C in its terminal, or kill ${fleet.pid})\n`,
    );
    const afterRefusal = total(await emulationRequests(fleet));

    // The first fleet goes on: its fleet file, its one Redis, its logs (none rotated or added),
    // its connectors pointing at its emulation, `status` finding it, its workers fetching.
    expect(readFileSync(join(dir.path, '.tickfleet/fleet.json'), 'utf8')).toBe(fleetText);
    expect(redisServers()).toEqual([fleet.redisPid]);
    expect(readdirSync(join(dir.path, '.tickfleet/logs')).sort()).toEqual(logsBefore);
    const connectors = JSON.parse((await cliIn(dir, ['connectors', 'list', '--json'])).stdout) as Array<{ baseUrl: string }>;
    expect(connectors.length).toBeGreaterThan(0);
    for (const c of connectors) expect(c.baseUrl.startsWith(fleet.mockVenueUrl)).toBe(true);
    const status = await cliIn(dir, ['status', '--json']);
    expect(status.code).toBe(0);
    expect((JSON.parse(status.stdout) as { venues: unknown[] }).venues.length).toBe(connectors.length);
    await waitFor(async () => total(await emulationRequests(fleet)) > afterRefusal, 'the first fleet still fetching after the refusal', { timeoutMs: 60_000 });

    expect(await stopUp(first)).toBe(0);
    expect(existsSync(join(dir.path, '.tickfleet/up.lock'))).toBe(false);
  }, 240_000);

  it('starts over a killed fleet: its lock does not block, its leases do not hold jobs, its logs are kept as the last run', async () => {
    const env = { TICKFLEET_SCHEDULER_LEASE_MS: LONG_LEASE };
    const first = startUp(dir, [], env);
    ups.push(first);
    await waitUp(first);
    const fleet = JSON.parse(readFileSync(join(dir.path, '.tickfleet/fleet.json'), 'utf8')) as FleetFile;
    // Killed while some jobs are leased (their units under way), the watchdog first so that nothing cleans up.
    await waitFor(async () => (await jobs(dir)).some((j) => j.lockedUntil !== null && j.lockedUntil > Date.now()), 'a job held by a lease', {
      timeoutMs: 60_000,
    });
    const watchdogs = processesNaming('fleet-watchdog.mjs').filter((pid) => parentOf(pid) === fleet.pid);
    expect(watchdogs).toHaveLength(1);
    const kill = (pid: number): void => {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone already
      }
    };
    for (const pid of watchdogs) kill(pid);
    first.proc.kill('SIGKILL');
    // Each role leads its own process group.
    for (const pid of Object.values(fleet.rolePids)) kill(-pid);
    if (fleet.redisPid) kill(fleet.redisPid);
    const killed = [fleet.pid, ...watchdogs, ...Object.values(fleet.rolePids), ...(fleet.redisPid ? [fleet.redisPid] : [])];
    await waitFor(() => killed.every((pid) => !pidAlive(pid)), 'the first fleet gone');
    expect(existsSync(join(dir.path, '.tickfleet/up.lock'))).toBe(true);

    // What the dead fleet left leased in the store: with a 1 h lease, each would wait an hour.
    const before = await jobs(dir);
    const leased = before.filter((j) => j.lockedUntil !== null && j.lockedUntil > Date.now());
    expect(leased.length).toBeGreaterThan(0);

    const next = startUp(dir, [], env);
    ups.push(next);
    await waitUp(next);
    const nextFleet = JSON.parse(readFileSync(join(dir.path, '.tickfleet/fleet.json'), 'utf8')) as FleetFile;
    expect(nextFleet.pid).toBe(next.proc.pid);
    // Every job the dead fleet held is claimed again (a new lease) or has run since.
    await waitFor(
      async () => {
        const now = new Map((await jobs(dir)).map((j) => [j.id, j]));
        return leased.every((j) => now.get(j.id)!.lockedUntil !== j.lockedUntil || now.get(j.id)!.stats.runs > j.stats.runs);
      },
      'the jobs the dead fleet held claimed by the new one',
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    // And their units run: the new fleet's emulation serves each venue whose only job was held.
    const perVenue = new Map<string, number>();
    for (const j of before) perVenue.set(j.venue, (perVenue.get(j.venue) ?? 0) + 1);
    const alone = [...new Set(leased.map((j) => j.venue))].filter((v) => perVenue.get(v) === 1);
    await waitFor(
      async () => {
        const requests = await emulationRequests(nextFleet);
        return alone.every((v) => (requests[v] ?? 0) > 0);
      },
      `requests of ${alone.join(', ')} at the new emulation`,
    );

    // The dead run's logs are kept as the previous run's; the new run writes new files.
    const logs = join(dir.path, '.tickfleet/logs');
    expect(readFileSync(join(logs, 'scheduler.log.1'), 'utf8')).toContain('scheduler started');
    expect(readFileSync(join(logs, 'scheduler.log'), 'utf8')).toContain('scheduler started');
    expect(readFileSync(join(logs, 'scheduler.log'), 'utf8')).toContain('released the leases of claims whose units went to another Redis');

    expect(await stopUp(next)).toBe(0);
    expect(existsSync(join(dir.path, '.tickfleet/up.lock'))).toBe(false);
  }, 240_000);

  it('rotates a role log past --log-max-bytes and keeps three older files, dropping the oldest lines', async () => {
    // Small files, so a loaded machine's demo fleet fills four of them well within the wait below.
    const maxBytes = 8192;
    const up = startUp(dir, ['--log-max-bytes', String(maxBytes)], { LOG_LEVEL: 'debug' });
    ups.push(up);
    await waitUp(up);
    expect(up.out()).toContain('logs:       .tickfleet/logs/{scheduler,worker-N,dashboard}.log (rotated past 8 KiB, 3 older kept)');
    const logs = join(dir.path, '.tickfleet/logs');
    const firstLine = await waitFor(() => readFileSync(join(logs, 'worker-0.log'), 'utf8').split('\n')[0], "the worker's first line");
    expect(firstLine).toContain('"level"');
    const files = (): string[] => readdirSync(logs).filter((f) => f.startsWith('worker-0.log'));
    // Rotated until the worker's first line is in none of its files: the oldest file was dropped.
    await waitFor(
      () => files().length === 4 && files().every((f) => !readFileSync(join(logs, f), 'utf8').includes(firstLine)),
      "the worker's first lines rotated out",
      {
        timeoutMs: 240_000,
        intervalMs: 500,
      },
    );
    expect(files().sort()).toEqual(['worker-0.log', 'worker-0.log.1', 'worker-0.log.2', 'worker-0.log.3']);
    for (const f of files().filter((name) => name !== 'worker-0.log')) {
      // A rotated file holds what the file had when a check found it past the cap.
      expect(statSync(join(logs, f)).size).toBeGreaterThan(maxBytes);
    }
    expect(await stopUp(up)).toBe(0);
  }, 360_000);
});
