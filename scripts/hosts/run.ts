/**
 * The multi-host topology by hand (root only: network namespaces). See docs/reliability.md#the-fleet-across-hosts.
 *
 *   node --import tsx scripts/hosts/run.ts up                  start the hosts, the scheduler and one worker per host; print where everything is; Ctrl-C removes it all
 *   node --import tsx scripts/hosts/run.ts scenario [--full] [names…]
 *                                                             run scenarios (scale, clock, store-split, redis-split, both-split, store-half-split,
 *                                                             link-cut, host-lost, redis-restart; default: all)
 *                                                             on one fleet and print each one's figures and end checks
 *
 *   node --import tsx scripts/hosts/run.ts clean               remove the namespaces and bridges of a run killed before it cleaned up
 *
 * `--full`: longer steps and partitions (60 s: longer than every lease and TTL of the fleet, the
 * 15 s unit lease the longest), and the scaling steps 1 -> 3 -> 8 -> 2.
 */
import { parseArgs } from 'node:util';
import { hostsUnsupported, removeLeftovers } from './netns.js';
import { HostTopology } from './topology.js';
import {
  clockScenario,
  endCheckFailures,
  ensureWorkerPerHost,
  endChecks,
  formatEndChecks,
  formatWaits,
  HOST_SCENARIO_DEFAULTS,
  hostLostScenario,
  partitionScenario,
  prepareFleet,
  redisRestartScenario,
  scaleScenario,
  scenarioStart,
  startBackfills,
  venueScenario,
  type EndChecks,
} from './scenarios.js';

const { values, positionals } = parseArgs({ options: { full: { type: 'boolean', default: false } }, allowPositionals: true });
const [command, ...names] = positionals;
const why = hostsUnsupported();
if (why) {
  process.stderr.write(`hosts: ${why}\n`);
  process.exit(2);
}
if (command === 'clean') {
  const removed = removeLeftovers();
  process.stdout.write(removed.length ? `removed ${removed.join(' ')}\n` : 'nothing left behind\n');
  process.exit(0);
}
const full = values.full;
const holdMs = full ? 60_000 : 30_000;
const fmt = (u: number | null): string => (u === null ? 'n/a' : u.toFixed(2));

const SCENARIOS: Record<string, (t: HostTopology, liveSince: number) => Promise<EndChecks>> = {
  scale: async (t, liveSince) => {
    const r = await scaleScenario(t, liveSince, {
      counts: full ? [1, 3, 8, 2] : [1, 2, 3],
      stepMs: full ? 30_000 : 20_000,
      backfillDays: 80,
      endDaysAgo: 10,
    });
    for (const s of r.steps)
      print(
        `  ${s.workers} worker process(es) (ready in ${s.transitionS} s): utilisation ${fmt(s.utilisation)} of the limit over ${s.windows} windows; in-flight max ${s.maxInflight} (cap ${r.cap})`,
      );
    return r.checks;
  },
  clock: async (t, liveSince) => {
    let last: EndChecks | undefined;
    for (const [i, offset] of (full ? ['+2s', '-2s', '+30s', '+120s'] : ['+30s']).entries()) {
      const r = await clockScenario(t, liveSince, {
        host: 'w3',
        offset,
        holdMs: full ? 40_000 : 20_000,
        backfillDays: full ? 28 : 14,
        endDaysAgo: 100 + 30 * i,
      });
      print(`  w3 clock ${offset}: utilisation ${fmt(r.utilisation)}; ${formatEndChecks(r.checks)}`);
      last = r.checks;
    }
    return last!;
  },
  'store-split': (t, liveSince) => split(t, liveSince, ['w2'], ['store'], 250),
  'redis-split': (t, liveSince) => split(t, liveSince, ['w2'], ['redis'], 310),
  'both-split': (t, liveSince) => split(t, liveSince, ['w2'], ['store', 'redis'], 370),
  // Half of the worker hosts, rounded up: the store reachable from the others only.
  'store-half-split': (t, liveSince) => split(t, liveSince, t.workerHosts.slice(0, Math.ceil(t.workerHosts.length / 2)), ['store'], 550),
  'link-cut': async (t, liveSince) => {
    await ensureWorkerPerHost(t);
    const start = await scenarioStart(t);
    const backfills = await startBackfills(t, full ? 48 : 24, 430);
    await new Promise((r) => setTimeout(r, HOST_SCENARIO_DEFAULTS.warmupMs));
    t.net.cutLink('w1');
    await new Promise((r) => setTimeout(r, holdMs));
    t.net.restoreLink('w1');
    return endChecks(t, { backfills, liveSince, ...start });
  },
  'host-lost': async (t, liveSince) => {
    const r = await hostLostScenario(t, liveSince, { host: 'w1', backfillDays: full ? 48 : 24, endDaysAgo: 490 });
    print(`  w1 lost with ${r.inflightAtKill} unit(s) in flight on it`);
    return r.checks;
  },
  'redis-restart': async (t, liveSince) => {
    const r = await redisRestartScenario(t, liveSince, { host: 'w2', holdMs, redisDownMs: 5000, backfillDays: full ? 48 : 24, endDaysAgo: 610 });
    print(`  Redis killed and restarted empty while w2's link was down ${holdMs / 1000} s`);
    return r.checks;
  },
};

async function split(t: HostTopology, liveSince: number, hosts: string[], peers: string[], endDaysAgo: number): Promise<EndChecks> {
  const r = await partitionScenario(t, liveSince, { hosts, peers, holdMs, backfillDays: full ? 48 : 24, endDaysAgo });
  print(
    `  ${hosts.join(', ')} <-> ${peers.join(', ')} cut ${holdMs / 1000} s: ${r.requestsDuring} requests during it (${r.hostRequestsDuring ?? 'n/a'} from ${hosts.join(', ')}, fallback engaged: ${r.fallbackEngaged}), ${r.overLimitDuring} over the limit during it`,
  );
  return r.checks;
}

function print(line: string): void {
  process.stdout.write(`${line}\n`);
}

const t = await HostTopology.start({ scenario: venueScenario() as never });
let stopping = false;
const stop = async (code: number): Promise<never> => {
  if (!stopping) {
    stopping = true;
    await t.stop();
  }
  process.exit(code);
};
process.on('SIGINT', () => void stop(130));
process.on('SIGTERM', () => void stop(143));
try {
  const { liveSince } = await prepareFleet(t);
  if (command === 'up') {
    for (const h of t.workerHosts) await t.startWorker(h);
    print(`hosts up (run ${t.net.runId}, subnet ${t.net.subnet}.0/24, bridge ${t.net.bridge}):`);
    for (const h of t.net.hosts.values()) print(`  ${h.name.padEnd(6)} ${h.ip.padEnd(15)} ip netns exec ${h.ns} …`);
    print(`  redis ${t.redisUrl}  store ${t.storeUrl}  venues ${t.venueUrl} (stats: ${t.venueUrl}/_mock/stats)`);
    print(`  faults: ip -n ${t.host('w1').ns} link set ${t.host('w1').dev} down | ip -n ${t.host('w2').ns} route add blackhole ${t.host('store').ip}/32`);
    print('Ctrl-C stops every process and removes the namespaces and the bridge.');
    await new Promise<never>(() => undefined);
  } else if (command === 'scenario') {
    const run = names.length ? names : Object.keys(SCENARIOS);
    let failed = 0;
    for (const name of run) {
      const scenario = SCENARIOS[name];
      if (!scenario) throw new Error(`unknown scenario ${name}; one of ${Object.keys(SCENARIOS).join(', ')}`);
      print(`scenario ${name}${full ? ' (full)' : ''}:`);
      const started = Date.now();
      const checks = await scenario(t, liveSince);
      const failures = endCheckFailures(checks);
      if (failures.length || checks.overLimit) failed += 1;
      print(`  ${formatEndChecks(checks)}; ${Math.round((Date.now() - started) / 1000)} s (${formatWaits(checks)})`);
      for (const f of failures) print(`  FAILED: ${f}`);
    }
    await stop(failed ? 1 : 0);
  } else {
    process.stderr.write('usage: run.ts up | scenario [--full] [names…]\n');
    await stop(2);
  }
} catch (err) {
  process.stderr.write(`${(err as Error).stack}\n`);
  await stop(1);
}
