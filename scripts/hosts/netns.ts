/**
 * The network of a host topology: one bridge in the root namespace and one network namespace per
 * host, joined to it by a veth pair, on a /24 of 10.0.0.0/8 chosen per run among those no
 * interface of this machine uses. Every name carries the run's id, so runs side by side (and a
 * crashed run's leftovers) never collide; {@link HostNetwork.remove} deletes what it created.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';

/** `ip …` synchronously; throws with its stderr. */
export function ip(...args: string[]): string {
  try {
    return execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`ip ${args.join(' ')}: ${e.stderr?.trim() || e.message}`);
  }
}

/** Why this machine cannot run the topology (not root, no `ip`), or null when it can. */
export function hostsUnsupported(): string | null {
  if (process.getuid?.() !== 0) return 'network namespaces need root (ip netns add)';
  try {
    ip('netns', 'list');
  } catch (err) {
    return `iproute2's ip does not work here: ${(err as Error).message}`;
  }
  return null;
}

export interface NetHost {
  name: string;
  /** The network namespace (`ip netns exec <ns> …`). */
  ns: string;
  ip: string;
  /** The veth end inside the namespace (what a link cut downs). */
  dev: string;
}

export class HostNetwork {
  readonly hosts = new Map<string, NetHost>();
  private readonly blackholes = new Set<string>();

  private constructor(
    /** Short id in every name this run creates. */
    readonly runId: string,
    /** `10.a.b`: hosts get `.2` upwards, the bridge `.1`. */
    readonly subnet: string,
    readonly bridge: string,
  ) {}

  /** A bridge with the root namespace's address `.1` on a free /24. */
  static create(): HostNetwork {
    const runId = randomBytes(2).toString('hex');
    const used = ip('-4', '-o', 'addr', 'show') + ip('-4', 'route', 'show', 'table', 'all');
    let subnet = '';
    for (let i = 0; i < 50 && !subnet; i++) {
      const candidate = `10.${randomInt(100, 250)}.${randomInt(0, 256)}`;
      if (!used.includes(`${candidate}.`)) subnet = candidate;
    }
    if (!subnet) throw new Error('no free 10.x.y.0/24 found for the host topology');
    const net = new HostNetwork(runId, subnet, `tf${runId}br`);
    ip('link', 'add', net.bridge, 'type', 'bridge');
    ip('addr', 'add', `${subnet}.1/24`, 'dev', net.bridge);
    ip('link', 'set', net.bridge, 'up');
    return net;
  }

  /** A namespace `tf<run>-<name>` at the next address, its veth on the bridge, loopback up. */
  addHost(name: string): NetHost {
    const index = this.hosts.size + 2;
    const ns = `tf${this.runId}-${name}`;
    const outer = `tf${this.runId}${name}`.slice(0, 13) + 'o';
    const dev = `tf${this.runId}${name}`.slice(0, 13) + 'i';
    const addr = `${this.subnet}.${index}`;
    ip('netns', 'add', ns);
    ip('link', 'add', outer, 'type', 'veth', 'peer', 'name', dev);
    ip('link', 'set', dev, 'netns', ns);
    ip('link', 'set', outer, 'master', this.bridge, 'up');
    ip('-n', ns, 'addr', 'add', `${addr}/24`, 'dev', dev);
    ip('-n', ns, 'link', 'set', dev, 'up');
    ip('-n', ns, 'link', 'set', 'lo', 'up');
    const host = { name, ns, ip: addr, dev };
    this.hosts.set(name, host);
    return host;
  }

  host(name: string): NetHost {
    const h = this.hosts.get(name);
    if (!h) throw new Error(`no host ${name} in topology ${this.runId}`);
    return h;
  }

  /** Link cut: the host's interface down (every peer, both directions). */
  cutLink(name: string): void {
    ip('-n', this.host(name).ns, 'link', 'set', this.host(name).dev, 'down');
  }

  restoreLink(name: string): void {
    const h = this.host(name);
    ip('-n', h.ns, 'link', 'set', h.dev, 'up');
  }

  /**
   * Cuts the link between two hosts only, by a blackhole route on each side (packets dropped
   * silently, as a partition does: connections hang, new ones time out). Other links stay up.
   */
  partition(a: string, b: string): void {
    for (const [from, to] of [
      [a, b],
      [b, a],
    ] as const) {
      const key = `${from}>${to}`;
      if (this.blackholes.has(key)) continue;
      ip('-n', this.host(from).ns, 'route', 'add', 'blackhole', `${this.host(to).ip}/32`);
      this.blackholes.add(key);
    }
  }

  heal(a: string, b: string): void {
    for (const [from, to] of [
      [a, b],
      [b, a],
    ] as const) {
      const key = `${from}>${to}`;
      if (!this.blackholes.delete(key)) continue;
      ip('-n', this.host(from).ns, 'route', 'del', 'blackhole', `${this.host(to).ip}/32`);
    }
  }

  /** Pids of every process in a host's namespace. */
  pids(name: string): number[] {
    return ip('netns', 'pids', this.host(name).ns).split('\n').filter(Boolean).map(Number);
  }

  /** Deletes the namespaces (their veths go with them) and the bridge; the caller killed their processes. */
  remove(): void {
    for (const h of this.hosts.values()) {
      try {
        ip('netns', 'del', h.ns);
      } catch {
        // already gone
      }
    }
    this.hosts.clear();
    try {
      ip('link', 'del', this.bridge);
    } catch {
      // already gone
    }
  }
}

/**
 * Removes what a killed run left behind (its process SIGKILLed before it could clean up): the
 * namespaces named like this module's with no process left in them, and the bridges of runs none
 * of whose namespaces remain. Returns what it removed.
 */
export function removeLeftovers(): string[] {
  const removed: string[] = [];
  const names = ip('netns', 'list')
    .split('\n')
    .map((l) => l.split(' ')[0]!)
    .filter((n) => /^tf[0-9a-f]{4}-/.test(n));
  for (const ns of names) {
    if (ip('netns', 'pids', ns).trim()) continue;
    ip('netns', 'del', ns);
    removed.push(ns);
  }
  const liveRuns = new Set(
    ip('netns', 'list')
      .split('\n')
      .map((l) => /^tf([0-9a-f]{4})-/.exec(l)?.[1])
      .filter(Boolean),
  );
  for (const m of ip('-o', 'link', 'show', 'type', 'bridge').matchAll(/^\d+: tf([0-9a-f]{4})br[:@]/gm)) {
    if (liveRuns.has(m[1]!)) continue;
    ip('link', 'del', `tf${m[1]}br`);
    removed.push(`tf${m[1]}br`);
  }
  return removed;
}
