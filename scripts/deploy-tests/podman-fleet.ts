/**
 * A tickfleet fleet as podman containers on one network, for the container tests: the image
 * built from the repository's Dockerfile (scripts/containers/build.sh), Redis in its own
 * container, the venue emulations in a container of the image (`tickfleet mock-venue`), and the
 * roles configured only through environment variables, as the manifests configure them. The
 * store and the sink are SQLite files on one shared volume (the image carries no MongoDB, and the
 * wire test server is a dev dependency the lean image leaves out); the test reads them from the
 * volume's directory on this machine.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { repoRoot, waitFor } from '@tickfleet/testkit';

const exec = (file: string, args: string[], timeoutMs: number): Promise<{ code: number; stdout: string; stderr: string }> =>
  new Promise((resolve) => {
    execFile(file, args, { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr: stderr || (err && typeof err.code !== 'number' ? err.message : '') });
    });
  });

/** `podman <args>`; its stdout, or an error carrying its stderr. */
export async function podman(args: string[], timeoutMs = 120_000): Promise<string> {
  const r = await exec('podman', args, timeoutMs);
  if (r.code !== 0) throw new Error(`podman ${args.join(' ')} exited ${r.code}: ${r.stderr.trim().slice(-2000)}`);
  return r.stdout;
}

/** Builds the image with scripts/containers/build.sh (setup included); its name and the seconds it took. */
export async function buildImage(): Promise<{ image: string; seconds: number; bytes: number }> {
  const started = Date.now();
  const r = await exec('bash', [join(repoRoot(), 'scripts', 'containers', 'build.sh')], 30 * 60_000);
  if (r.code !== 0) throw new Error(`scripts/containers/build.sh exited ${r.code}: ${r.stderr.slice(-3000)}`);
  const image = r.stdout.trim().split('\n').at(-1)!;
  const bytes = Number((await podman(['image', 'inspect', '--format', '{{.Size}}', image])).trim());
  return { image, seconds: Math.round((Date.now() - started) / 1000), bytes };
}

export const REDIS_IMAGE = 'localhost/tickfleet-redis:bookworm';

/** Settings every role of the fleet gets, as the manifests' ConfigMap and Secret give them, plus faster test timings. */
function roleEnv(prefix: string): Record<string, string> {
  return {
    REDIS_URL: `redis://${prefix}-redis:6379`,
    TICKFLEET_PREFIX: 'tickfleet',
    TICKFLEET_STORE_URL: 'sqlite:///data/state.db',
    TICKFLEET_SINK_URL: 'sqlite:///data/data.db',
    TICKFLEET_HEALTH_PORT: '9464',
    TICKFLEET_GRACE_MS: '5000',
    TICKFLEET_UNIT_LOCK_MS: '5000',
    TICKFLEET_STALLED_INTERVAL_MS: '2000',
    TICKFLEET_CONNECTOR_POLL_MS: '500',
    TICKFLEET_HEARTBEAT_MS: '5000',
    TICKFLEET_SCHEDULER_TICK_MS: '500',
    TICKFLEET_SCHEDULER_LEADER_TTL_MS: '2000',
    TICKFLEET_SCHEDULER_LEASE_MS: '15s',
    TICKFLEET_SCHEDULER_REPAIR_MS: '2s',
    LOG_LEVEL: 'info',
  };
}

export class PodmanFleet {
  /** Names of this fleet's network, volumes and containers start with it. */
  readonly prefix = `tf-${randomBytes(3).toString('hex')}`;
  readonly network = `${this.prefix}-net`;
  readonly dataVolume = `${this.prefix}-data`;
  private readonly containers = new Set<string>();
  private readonly volumes = new Set<string>([this.dataVolume]);
  /** Host directory of the shared data volume (store and sink files). */
  dataDir = '';
  mockUrl = '';

  constructor(readonly image: string) {}

  /** The network, the shared volume, Redis and the emulations. */
  async start(): Promise<void> {
    await podman(['network', 'create', this.network]);
    await podman(['volume', 'create', this.dataVolume]);
    this.dataDir = (await podman(['volume', 'inspect', '--format', '{{.Mountpoint}}', this.dataVolume])).trim();
    await this.run('redis', REDIS_IMAGE, ['--port', '6379', '--protected-mode', 'no', '--save', '', '--appendonly', 'no'], { user: false });
    await this.run('mock', this.image, ['mock-venue', '--port', '8080', '--host', '0.0.0.0'], { ports: [8080] });
    this.mockUrl = `http://${await this.hostPort('mock', 8080)}`;
    await waitFor(
      () =>
        fetch(`${this.mockUrl}/_mock/stats`).then(
          (r) => r.ok,
          () => false,
        ),
      'mock-venue container answering',
      {
        timeoutMs: 60_000,
        intervalMs: 250,
      },
    );
  }

  name(short: string): string {
    return `${this.prefix}-${short}`;
  }

  /**
   * `podman run -d` of one container named `<prefix>-<short>` on the fleet network: a read-only
   * root filesystem, no capabilities, no privilege escalation (the manifests' securityContext),
   * the shared data volume at /data and, for workers, `spool` as its spool volume.
   */
  async run(
    short: string,
    image: string,
    args: string[],
    opts: { env?: Record<string, string>; ports?: number[]; spool?: string; user?: boolean } = {},
  ): Promise<string> {
    const name = this.name(short);
    const flags = ['run', '-d', '--name', name, '--network', this.network, '--read-only', '--cap-drop', 'ALL', '--security-opt', 'no-new-privileges'];
    if (opts.user !== false) {
      flags.push('-v', `${this.dataVolume}:/data:U`);
      for (const [k, v] of Object.entries({ ...roleEnv(this.prefix), ...opts.env })) flags.push('-e', `${k}=${v}`);
    }
    if (opts.spool) {
      this.volumes.add(opts.spool);
      flags.push('-v', `${opts.spool}:/var/lib/tickfleet/spool:U`);
    }
    for (const p of opts.ports ?? []) flags.push('-p', `127.0.0.1::${p}`);
    this.containers.add(name);
    await podman([...flags, image, ...args]);
    return name;
  }

  /** A one-off `tickfleet <args>` container on the network; its stdout (fails on a non-zero exit). */
  async cli(args: string[]): Promise<string> {
    const flags = ['run', '--rm', '--network', this.network, '--read-only', '-v', `${this.dataVolume}:/data:U`];
    for (const [k, v] of Object.entries({ ...roleEnv(this.prefix), LOG_LEVEL: 'warn' })) flags.push('-e', `${k}=${v}`);
    return podman([...flags, this.image, ...args], 180_000);
  }

  /** `127.0.0.1:<port>` where the container's `port` is published. */
  async hostPort(short: string, port: number): Promise<string> {
    return (await podman(['port', this.name(short), `${port}/tcp`])).trim().split('\n')[0]!;
  }

  async logs(short: string): Promise<string> {
    const r = await exec('podman', ['logs', this.name(short)], 30_000);
    return r.stdout + r.stderr;
  }

  async state(short: string): Promise<{ running: boolean; exitCode: number }> {
    const [running, code] = (await podman(['inspect', '--format', '{{.State.Running}} {{.State.ExitCode}}', this.name(short)])).trim().split(' ');
    return { running: running === 'true', exitCode: Number(code) };
  }

  /** Host directory of a named volume. */
  async volumeDir(volume: string): Promise<string> {
    return (await podman(['volume', 'inspect', '--format', '{{.Mountpoint}}', volume])).trim();
  }

  /** `podman rm -f` a container (SIGKILL if running); its volumes stay. */
  async remove(short: string): Promise<void> {
    await podman(['rm', '-f', '-v', this.name(short)]);
    this.containers.delete(this.name(short));
  }

  /** Every container, then the volumes and the network. */
  async stop(): Promise<void> {
    if (this.containers.size > 0) await exec('podman', ['rm', '-f', '-v', '-t', '0', ...this.containers], 120_000);
    if (this.volumes.size > 0) await exec('podman', ['volume', 'rm', '-f', ...this.volumes], 60_000);
    await exec('podman', ['network', 'rm', '-f', this.network], 60_000);
  }
}
