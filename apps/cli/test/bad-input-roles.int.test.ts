import { readFileSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import { freePort, spawnCli, startRestartableRedis, waitFor } from '@tickfleet/testkit';
import { expectOneLine, inBatches, openBadInputFleet, type BadInputCase, type BadInputFleet } from './bad-input-fixture.js';

/**
 * Fuzzed environment of every role (worker, scheduler, dashboard, started through the CLI as in
 * production): a bad value ends the process promptly with exit 2 and one line naming the
 * variable (1 when Redis does not answer), never a stack trace or a process left alive doing
 * nothing; nothing stored changes. Then the roles' bindings and their behaviour when Redis goes
 * away for good.
 */

interface Running {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function start(args: string[], env: Record<string, string>, cwd: string): Running {
  const child = spawnCli(args, { env, cwd });
  let out = '';
  let err = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal })),
  );
  return { child, stdout: () => out, stderr: () => err, exit };
}

/** Waits (generously: a loaded machine) for the process to exit by itself; kills it if it never does. */
async function exited(r: Running, timeoutMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null } | 'still running'> {
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([r.exit, new Promise<'still running'>((resolve) => (timer = setTimeout(() => resolve('still running'), timeoutMs)))]);
  clearTimeout(timer);
  if (outcome === 'still running') {
    r.child.kill('SIGKILL');
    await r.exit;
  }
  return outcome;
}

const ROLES = ['worker', 'scheduler', 'dashboard'] as const;

/**
 * How long the roles below tolerate a Redis that is gone (TICKFLEET_REDIS_GIVE_UP_MS, 60 s by
 * default): what is under test is that they give up and how often they log meanwhile, not the
 * default's length, so a shorter one keeps the suite quick.
 */
const GIVE_UP_S = 15;

function cases(f: BadInputFleet, portInUse: number): Array<BadInputCase & { role: string }> {
  const role = (r: string, name: string, env: Record<string, string>, code: number, message: RegExp): BadInputCase & { role: string } => ({
    role: r,
    name: `${r}: ${name}`,
    args: r === 'dashboard' ? [r, '--port', '0'] : [r],
    env,
    code,
    message,
  });
  return [
    ...ROLES.flatMap((r) => [
      role(r, 'LOG_LEVEL=verbose', { LOG_LEVEL: 'verbose' }, 2, /invalid configuration LOG_LEVEL: expected one of fatal, error, warn, info/),
      role(r, 'store URL with a malformed escape', { TICKFLEET_STORE_URL: 'sqlite://%zz' }, 2, /invalid store URL/),
      role(r, 'store that is not a database', { TICKFLEET_STORE_URL: `sqlite://${f.notADatabase}` }, 2, /invalid --store \(TICKFLEET_STORE_URL\)/),
      role(r, 'REDIS_URL not a URL', { REDIS_URL: 'notaurl' }, 2, /invalid configuration REDIS_URL/),
      role(r, 'bad prefix', { TICKFLEET_PREFIX: 'bad{prefix}' }, 2, /invalid configuration TICKFLEET_PREFIX/),
      role(r, 'Redis give-up not a duration', { TICKFLEET_REDIS_GIVE_UP_MS: 'soon' }, 2, /invalid configuration TICKFLEET_REDIS_GIVE_UP_MS/),
      role(r, 'unreachable Redis', { REDIS_URL: `redis://127.0.0.1:${f.closedPort}` }, 1, /Redis at redis:\/\/127\.0\.0\.1:\d+ did not answer within 10 s/),
    ]),
    role('worker', 'spool dir /dev/null', { TICKFLEET_SPOOL_DIR: '/dev/null' }, 2, /invalid configuration TICKFLEET_SPOOL_DIR/),
    role('worker', 'health port in use', { TICKFLEET_HEALTH_PORT: String(portInUse) }, 2, /invalid configuration TICKFLEET_HEALTH_PORT: expected a free port/),
    role('worker', 'unresolvable health host', { TICKFLEET_HEALTH_HOST: 'no-such-host.invalid' }, 2, /invalid configuration TICKFLEET_HEALTH_HOST/),
    role('worker', 'grace not a number', { TICKFLEET_GRACE_MS: 'abc' }, 2, /invalid configuration TICKFLEET_GRACE_MS/),
    role('worker', 'venue list', { TICKFLEET_VENUES: 'Binance' }, 2, /invalid configuration TICKFLEET_VENUES/),
    role('worker', 'sink that is not a database', { TICKFLEET_SINK_URL: `sqlite://${f.notADatabase}` }, 2, /invalid TICKFLEET_SINK_URL/),
    role('worker', 'sink URL with a malformed escape', { TICKFLEET_SINK_URL: 'sqlite://%zz' }, 2, /invalid sinkUrl/),
    role(
      'scheduler',
      'health port in use',
      { TICKFLEET_HEALTH_PORT: String(portInUse) },
      2,
      /invalid configuration TICKFLEET_HEALTH_PORT: expected a free port/,
    ),
    role('scheduler', 'unresolvable health host', { TICKFLEET_HEALTH_HOST: 'no-such-host.invalid' }, 2, /invalid configuration TICKFLEET_HEALTH_HOST/),
    role('scheduler', 'tick 0', { TICKFLEET_SCHEDULER_TICK_MS: '0' }, 2, /invalid configuration TICKFLEET_SCHEDULER_TICK_MS/),
    role('dashboard', 'host 999.1.1.1', { TICKFLEET_DASHBOARD_HOST: '999.1.1.1' }, 2, /invalid configuration TICKFLEET_DASHBOARD_HOST/),
    { ...role('dashboard', 'port in use', {}, 2, /invalid --port: expected a free port/), args: ['dashboard', '--port', String(portInUse)] },
    role('dashboard', 'actions without credentials', { TICKFLEET_DASHBOARD_ALLOW_ACTIONS: '1' }, 2, /invalid configuration TICKFLEET_DASHBOARD_TOKEN/),
  ];
}

/** The local address a TCP port listens on, from /proc/net/tcp (e.g. 0100007F = 127.0.0.1). */
function listenAddresses(port: number): string[] {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  return readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .slice(1)
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f[1]?.endsWith(`:${hexPort}`) && f[3] === '0A')
    .map((f) => f[1]!.split(':')[0]!);
}

describe('bad role environment', () => {
  let fleet: BadInputFleet;
  let baseline: string;

  beforeAll(async () => {
    fleet = await openBadInputFleet();
    baseline = await fleet.dump();
  }, 120_000);
  afterAll(async () => {
    await fleet?.close();
  });

  it('every role exits promptly with its code and one line naming the variable, and nothing stored changes', async () => {
    const table = cases(fleet, fleet.redis.port);
    const unreachable = (c: BadInputCase): boolean => c.env?.REDIS_URL?.endsWith(`:${fleet.closedPort}`) === true;
    const results = await inBatches(
      table,
      3,
      async (c) => {
        const r = start(c.args, { ...fleet.env, ...c.env }, fleet.dir.path);
        return { c, outcome: await exited(r, 60_000), stderr: r.stderr() };
      },
      unreachable,
    );
    const wrong: string[] = [];
    for (const { c, outcome, stderr } of results) {
      if (outcome === 'still running' || outcome.code !== c.code || !c.message.test(stderr)) {
        wrong.push(
          `${c.name}: ${outcome === 'still running' ? 'still running after 60 s' : `exit ${outcome.code}`}, stderr ${JSON.stringify(stderr.slice(0, 400))}`,
        );
        continue;
      }
      expectOneLine(stderr);
    }
    expect(wrong).toEqual([]);
    expect(await fleet.dump()).toBe(baseline);
  }, 600_000);

  it('an empty TICKFLEET_VENUES serves every venue; the scheduler health server listens on loopback only', async () => {
    const workerPort = await freePort();
    const schedulerPort = await freePort();
    const env = { ...fleet.env, LOG_LEVEL: 'info' };
    const worker = start(['worker'], { ...env, TICKFLEET_VENUES: '', TICKFLEET_HEALTH_PORT: String(workerPort) }, fleet.dir.path);
    // No TICKFLEET_HEALTH_HOST: the default is what is under test.
    const scheduler = start(['scheduler'], { ...env, TICKFLEET_HEALTH_PORT: String(schedulerPort) }, fleet.dir.path);
    try {
      await waitFor(() => /"msg":"worker ready"/.test(worker.stdout()), `worker ready (stderr: ${worker.stderr()})`, { timeoutMs: 60_000 });
      const ready = worker
        .stdout()
        .split('\n')
        .find((l) => l.includes('"worker ready"'))!;
      expect((JSON.parse(ready) as { venues: string[] }).venues.sort()).toEqual(['binance', 'polygon']);
      await waitFor(async () => (await fetch(`http://127.0.0.1:${schedulerPort}/healthz`).catch(() => null))?.ok, 'scheduler /healthz', { timeoutMs: 60_000 });
      expect(listenAddresses(schedulerPort)).toEqual(['0100007F']);
      expect(listenAddresses(workerPort)).toEqual(['0100007F']);
    } finally {
      worker.child.kill('SIGTERM');
      scheduler.child.kill('SIGTERM');
      expect(await exited(worker, 60_000)).toEqual({ code: 0, signal: null });
      expect(await exited(scheduler, 60_000)).toEqual({ code: 0, signal: null });
    }
  }, 180_000);

  it('roles whose Redis is gone for good exit 1 with one line, logging connection errors at a bounded rate', async () => {
    // A private server this test owns (never REDIS_URL): it is stopped for good below.
    const redis = await startRestartableRedis();
    const env = { ...fleet.env, REDIS_URL: redis.url, LOG_LEVEL: 'info', TICKFLEET_REDIS_GIVE_UP_MS: `${GIVE_UP_S}s` };
    const roles = ROLES.map((r) => ({ role: r, p: start(r === 'dashboard' ? [r, '--port', '0'] : [r], env, fleet.dir.path) }));
    let stopped = false;
    try {
      await waitFor(() => /"msg":"worker ready"/.test(roles[0]!.p.stdout()), 'worker ready', { timeoutMs: 60_000 });
      await waitFor(() => /"msg":"scheduler started"/.test(roles[1]!.p.stdout()), 'scheduler started', { timeoutMs: 60_000 });
      await waitFor(() => /dashboard listening on/.test(roles[2]!.p.stdout()), 'dashboard listening', { timeoutMs: 60_000 });
      await redis.stop();
      stopped = true;
      // Each role gives up after GIVE_UP_S without Redis; the wait allows a loaded machine.
      for (const { role, p } of roles) {
        const outcome = await exited(p, 150_000);
        expect([role, outcome]).toEqual([role, { code: 1, signal: null }]);
        expect(p.stderr()).toMatch(
          new RegExp(`tickfleet: ${role}: Redis at redis://127\\.0\\.0\\.1:\\d+ unreachable for ${GIVE_UP_S} s: .*ECONNREFUSED.*; exiting`),
        );
        expect(p.stderr()).not.toMatch(/^\s+at /m);
      }
      // Without rate limiting a worker logs ~50 lines a second per venue while Redis is down
      // (~750 per venue over GIVE_UP_S); one line per cause per venue per 10 s allows at most
      // ~2 per venue over the outage, 9 leaves room for a slow exit on a loaded machine.
      const errorLines = roles[0]!.p
        .stdout()
        .split('\n')
        .filter((l) => l.includes('"msg":"bullmq worker error"'));
      expect(errorLines.length).toBeGreaterThan(0);
      expect(errorLines.length).toBeLessThanOrEqual(2 * 9);
    } finally {
      for (const { p } of roles) if (p.child.exitCode === null) p.child.kill('SIGKILL');
      if (!stopped) await redis.stop();
    }
  }, 400_000);
});
