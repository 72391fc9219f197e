/**
 * The Kubernetes deploy (deploy/k8s) without a cluster: every manifest and every rendered overlay
 * validates against the Kubernetes (and prometheus-operator, KEDA) JSON schemas of
 * kubernetes-models, the kustomizations resolve (files exist, patches hit existing objects and
 * containers), and probes, ports and env names match what the roles actually read and serve.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ConfigMap, Namespace, Secret, Service, ServiceAccount } from 'kubernetes-models/v1';
import { Deployment, StatefulSet } from 'kubernetes-models/apps/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { PrometheusRule, ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { ScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1';
import { WorkerEnv } from '@tickfleet/worker';
import { SchedulerEnv } from '@tickfleet/scheduler';
import { DashboardEnv } from '@tickfleet/dashboard';
import { createRegistry, HealthServer, isCatalogMetric } from '@tickfleet/telemetry';
import { parsePromql, ROOT } from './deploy-files.js';
import { loadYamlDocs, resolveKustomization, type K8sObject, type Resolved } from './kustomize.js';

const K8S = join(ROOT, 'deploy/k8s');

interface Validating {
  validate(): void;
}
type ModelClass = new (data: never) => Validating;
const MODELS: Record<string, ModelClass> = {
  'v1/ConfigMap': ConfigMap as unknown as ModelClass,
  'v1/Namespace': Namespace as unknown as ModelClass,
  'v1/Secret': Secret as unknown as ModelClass,
  'v1/Service': Service as unknown as ModelClass,
  'v1/ServiceAccount': ServiceAccount as unknown as ModelClass,
  'apps/v1/Deployment': Deployment as unknown as ModelClass,
  'apps/v1/StatefulSet': StatefulSet as unknown as ModelClass,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget as unknown as ModelClass,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler as unknown as ModelClass,
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor as unknown as ModelClass,
  'monitoring.coreos.com/v1/PrometheusRule': PrometheusRule as unknown as ModelClass,
  'keda.sh/v1alpha1/ScaledObject': ScaledObject as unknown as ModelClass,
};

/** Validates against the schema; returns the validation message or 'ok'. */
function validateObject(obj: K8sObject): string {
  const Model = MODELS[`${obj.apiVersion}/${obj.kind}`];
  if (!Model) return `no schema for ${obj.apiVersion} ${obj.kind}`;
  try {
    new Model(obj as never).validate();
    return 'ok';
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

// ---- pod spec helpers --------------------------------------------------------------------------
interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean }; configMapKeyRef?: { name: string; key: string; optional?: boolean } };
}
interface Probe {
  httpGet?: { path: string; port: string | number };
}
interface Container {
  name: string;
  image: string;
  args?: string[];
  ports?: Array<{ name?: string; containerPort: number }>;
  env?: EnvVar[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  volumeMounts?: Array<{ name: string; mountPath: string }>;
  securityContext?: { readOnlyRootFilesystem?: boolean };
}
interface PodSpec {
  containers: Container[];
  terminationGracePeriodSeconds?: number;
  securityContext?: { runAsUser?: number; runAsNonRoot?: boolean };
  volumes?: Array<{ name: string }>;
}
interface Workload extends K8sObject {
  spec: { replicas?: number; selector: { matchLabels: Record<string, string> }; template: { metadata: { labels: Record<string, string> }; spec: PodSpec } };
}

const ROLE_ENV: Record<string, readonly string[]> = {
  worker: Object.keys(WorkerEnv.shape),
  scheduler: Object.keys(SchedulerEnv.shape),
  dashboard: Object.keys(DashboardEnv.shape),
};

function deployments(r: Resolved): Workload[] {
  return r.objects.filter((o): o is Workload => o.kind === 'Deployment');
}
function deploymentOf(r: Resolved, role: string): Workload {
  const d = deployments(r).find((x) => x.metadata.name === `tickfleet-${role}`);
  if (!d) throw new Error(`no tickfleet-${role} Deployment`);
  return d;
}
function mainContainer(d: Workload): Container {
  const c = d.spec.template.spec.containers[0];
  if (!c) throw new Error(`${d.metadata.name} has no container`);
  return c;
}
function envValue(r: Resolved, c: Container, name: string): string | undefined {
  const e = c.env?.find((x) => x.name === name);
  if (e?.value !== undefined) return e.value;
  const ref = e?.valueFrom?.configMapKeyRef;
  if (!ref) return undefined;
  const cm = r.objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === ref.name) as (K8sObject & { data?: Record<string, string> }) | undefined;
  return cm?.data?.[ref.key];
}
function selects(selector: Record<string, string>, labels: Record<string, string> | undefined): boolean {
  return Object.entries(selector).every(([k, v]) => labels?.[k] === v);
}
function portNumber(c: Container, port: string | number): number | undefined {
  return typeof port === 'number' ? port : c.ports?.find((p) => p.name === port)?.containerPort;
}

const OVERLAYS = readdirSync(join(K8S, 'overlays')).sort();
const rendered: Record<string, Resolved> = {};

describe('kubernetes manifests', () => {
  beforeAll(() => {
    rendered.base = resolveKustomization(join(K8S, 'base'), ROOT);
    for (const o of OVERLAYS) rendered[o] = resolveKustomization(join(K8S, 'overlays', o), ROOT);
  });

  it('has a base and the dev and prod overlays, each resolving (files exist, patches hit existing objects)', () => {
    expect(OVERLAYS).toEqual(['dev', 'prod']);
    for (const r of Object.values(rendered)) expect(r.objects.length).toBeGreaterThan(5);
    // Every YAML file under deploy/k8s is reached from some kustomization: nothing is dead.
    const reached = new Set(Object.values(rendered).flatMap((r) => r.files));
    const all: string[] = [];
    const walk = (dir: string): void => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (/\.ya?ml$/.test(e.name)) all.push(relative(ROOT, p));
      }
    };
    walk(K8S);
    expect(all.filter((f) => !reached.has(f))).toEqual([]);
  });

  it('rejects a patch of an object the base does not define (the resolver is not lenient)', () => {
    expect(() => resolveKustomization(join(ROOT, 'scripts/deploy-tests/fixtures/bad-overlay'), ROOT)).toThrow(/tickfleet-wroker.*do not define/);
  });

  it('validates every manifest file document against its Kubernetes schema', () => {
    const files = [...new Set(Object.values(rendered).flatMap((r) => r.files))].filter((f) => !f.endsWith('kustomization.yaml') && !f.includes('/patches/'));
    expect(files.length).toBeGreaterThan(8);
    const failures: string[] = [];
    for (const f of files) {
      for (const doc of loadYamlDocs(join(ROOT, f))) {
        const obj = doc as K8sObject;
        const res = validateObject(obj);
        if (res !== 'ok') failures.push(`${f} ${obj.kind}/${obj.metadata.name}: ${res}`);
      }
    }
    expect(failures).toEqual([]);
  });

  it.each(['base', 'dev', 'prod'])('validates every object of the rendered %s against its schema', (name) => {
    const r = rendered[name] as Resolved;
    const failures = r.objects
      .map((o) => ({ o, res: validateObject(o) }))
      .filter((x) => x.res !== 'ok')
      .map((x) => `${x.o.kind}/${x.o.metadata.name}: ${x.res}`);
    expect(failures).toEqual([]);
  });

  it('catches an invalid manifest (the schemas are really applied)', () => {
    const bad = structuredClone(deploymentOf(rendered.base as Resolved, 'worker'));
    (bad.spec.template.spec.containers[0] as unknown as { ports: unknown[] }).ports = [{ name: 'health', containerPort: '9464' }];
    expect(validateObject(bad)).toMatch(/containerPort must be integer/);
  });

  it.each(['dev', 'prod'])('%s: every Secret and ConfigMap reference resolves (prod: the documented external Secret)', (name) => {
    const r = rendered[name] as Resolved;
    const deployDoc = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8');
    const problems: string[] = [];
    for (const w of r.objects.filter((o): o is Workload => o.kind === 'Deployment' || o.kind === 'StatefulSet')) {
      for (const c of w.spec.template.spec.containers) {
        for (const e of c.env ?? []) {
          const ref = e.valueFrom?.secretKeyRef ?? e.valueFrom?.configMapKeyRef;
          if (!ref || ref.optional) continue;
          const kind = e.valueFrom?.secretKeyRef ? 'Secret' : 'ConfigMap';
          const obj = r.objects.find((o) => o.kind === kind && o.metadata.name === ref.name) as
            (K8sObject & { data?: Record<string, string>; stringData?: Record<string, string> }) | undefined;
          const gen = r.generated.find((g) => g.kind === kind && g.name === ref.name);
          const keys = obj ? Object.keys({ ...obj.data, ...obj.stringData }) : gen?.keys;
          if (keys) {
            if (!keys.includes(ref.key)) problems.push(`${w.metadata.name}/${c.name} ${e.name}: ${kind} ${ref.name} has no key ${ref.key}`);
          } else if (name === 'prod' && kind === 'Secret') {
            // Created out of band: docs/deploy.md must say how, with this key.
            if (!deployDoc.includes(ref.name) || !deployDoc.includes(`${ref.key}=`))
              problems.push(`${ref.name}/${ref.key} is not documented in docs/deploy.md`);
          } else {
            problems.push(`${w.metadata.name}/${c.name} ${e.name}: ${kind} ${ref.name} does not exist`);
          }
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it.each(['base', 'dev', 'prod'])('%s: each role runs its CLI command with only env vars that role reads', (name) => {
    const r = rendered[name] as Resolved;
    for (const role of ['worker', 'scheduler', 'dashboard']) {
      const c = mainContainer(deploymentOf(r, role));
      expect(c.image).toMatch(/(^|\/)tickfleet(:|$)/);
      expect(c.args?.[0]).toBe(role);
      const names = (c.env ?? []).map((e) => e.name);
      expect({ role, unknown: names.filter((n) => !ROLE_ENV[role]?.includes(n)) }).toEqual({ role, unknown: [] });
      expect(names).toContain('REDIS_URL');
      expect(names).toContain('TICKFLEET_STORE_URL');
      expect(names).toContain('TICKFLEET_PREFIX');
    }
    const worker = mainContainer(deploymentOf(r, 'worker'));
    expect(worker.env?.map((e) => e.name)).toEqual(expect.arrayContaining(['TICKFLEET_SINK_URL', 'TICKFLEET_SPOOL_DIR', 'TICKFLEET_GRACE_MS']));
    // Inside a pod the health server must listen on all interfaces for the kubelet and Prometheus.
    expect(envValue(r, worker, 'TICKFLEET_HEALTH_HOST')).toBe('0.0.0.0');
    expect(envValue(r, mainContainer(deploymentOf(r, 'scheduler')), 'TICKFLEET_HEALTH_HOST')).toBe('0.0.0.0');
    expect(envValue(r, mainContainer(deploymentOf(r, 'dashboard')), 'TICKFLEET_DASHBOARD_HOST')).toBe('0.0.0.0');
    // Every role sees the same Redis key prefix.
    const prefixes = new Set(['worker', 'scheduler', 'dashboard'].map((role) => envValue(r, mainContainer(deploymentOf(r, role)), 'TICKFLEET_PREFIX')));
    expect(prefixes.size).toBe(1);
  });

  it.each(['base', 'dev', 'prod'])('%s: probes use /healthz and /readyz on the port each role listens on', (name) => {
    const r = rendered[name] as Resolved;
    for (const role of ['worker', 'scheduler', 'dashboard']) {
      const c = mainContainer(deploymentOf(r, role));
      expect(c.livenessProbe?.httpGet?.path).toBe('/healthz');
      expect(c.readinessProbe?.httpGet?.path).toBe('/readyz');
      const live = portNumber(c, c.livenessProbe?.httpGet?.port ?? -1);
      const ready = portNumber(c, c.readinessProbe?.httpGet?.port ?? -1);
      const listen =
        role === 'dashboard'
          ? Number(c.args?.[c.args.indexOf('--port') + 1] ?? envValue(r, c, 'TICKFLEET_DASHBOARD_PORT') ?? 3000)
          : Number(envValue(r, c, 'TICKFLEET_HEALTH_PORT'));
      expect({ role, live, ready }).toEqual({ role, live: listen, ready: listen });
    }
  });

  it("serves the probed paths and /metrics from the roles' HealthServer", async () => {
    const registry = createRegistry('probe-test', { defaultMetrics: false });
    const server = new HealthServer({ registry, readiness: { store: () => true } });
    const port = await server.start();
    try {
      for (const path of ['/healthz', '/readyz', '/metrics'])
        expect({ path, status: (await fetch(`http://127.0.0.1:${port}${path}`)).status }).toEqual({ path, status: 200 });
      server.setDraining();
      expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(503);
    } finally {
      await server.stop();
    }
  });

  it.each(['base', 'dev', 'prod'])('%s: worker grace period and preStop cover TICKFLEET_GRACE_MS and the shutdown hard limit', (name) => {
    const r = rendered[name] as Resolved;
    const d = deploymentOf(r, 'worker');
    const c = mainContainer(d);
    const graceMs = Number(envValue(r, c, 'TICKFLEET_GRACE_MS') ?? WorkerEnv.shape.TICKFLEET_GRACE_MS.parse(undefined));
    // run-worker.ts exits at the latest `TICKFLEET_GRACE_MS + margin` after SIGTERM.
    const source = readFileSync(join(ROOT, 'apps/worker/src/run-worker.ts'), 'utf8');
    const margin = /config\.TICKFLEET_GRACE_MS \+ ([\d_]+)/.exec(source)?.[1];
    expect(margin).toBeDefined();
    const hardLimitS = (graceMs + Number(margin?.replace(/_/g, ''))) / 1000;
    const cmd = c.lifecycle?.preStop?.exec?.command ?? [];
    expect(cmd[0]).toBe('sleep');
    const preStopS = Number(cmd[1]);
    const period = d.spec.template.spec.terminationGracePeriodSeconds ?? 30;
    // Long enough that SIGKILL never cuts the shutdown short, not so long that a stuck pod lingers.
    expect(period).toBeGreaterThanOrEqual(preStopS + hardLimitS);
    expect(period).toBeLessThanOrEqual(preStopS + hardLimitS + 15);
    expect(graceMs).toBe(25_000);
    expect(period).toBe(40);
  });

  it.each(['base', 'dev', 'prod'])('%s: scheduler runs 2 replicas; Services, PDBs and the ServiceMonitor select existing pods and ports', (name) => {
    const r = rendered[name] as Resolved;
    expect(deploymentOf(r, 'scheduler').spec.replicas).toBe(2);
    const pods = deployments(r).map((d) => ({ d, labels: d.spec.template.metadata.labels, c: mainContainer(d) }));
    for (const d of deployments(r)) expect(selects(d.spec.selector.matchLabels, d.spec.template.metadata.labels)).toBe(true);
    const services = r.objects.filter((o) => o.kind === 'Service' && o.metadata.labels?.['app.kubernetes.io/name'] === 'tickfleet') as Array<
      K8sObject & { spec: { selector: Record<string, string>; ports: Array<{ name: string; port: number; targetPort: string | number }> } }
    >;
    expect(services.length).toBe(3);
    for (const s of services) {
      const target = pods.filter((p) => selects(s.spec.selector, p.labels));
      expect({ service: s.metadata.name, pods: target.length }).toEqual({ service: s.metadata.name, pods: 1 });
      for (const port of s.spec.ports)
        expect({ service: s.metadata.name, port: port.name, ok: portNumber(target[0]!.c, port.targetPort) !== undefined }).toEqual({
          service: s.metadata.name,
          port: port.name,
          ok: true,
        });
    }
    const pdbs = r.objects.filter((o) => o.kind === 'PodDisruptionBudget') as Array<
      K8sObject & { spec: { selector: { matchLabels: Record<string, string> } } }
    >;
    expect(pdbs.map((p) => p.metadata.name).sort()).toEqual(['tickfleet-scheduler', 'tickfleet-worker']);
    for (const p of pdbs) expect(pods.filter((x) => selects(p.spec.selector.matchLabels, x.labels)).length).toBe(1);
    const sm = r.objects.find((o) => o.kind === 'ServiceMonitor') as K8sObject & {
      spec: { selector: { matchLabels: Record<string, string> }; endpoints: Array<{ port: string; path: string }> };
    };
    const scraped = services.filter((s) => selects(sm.spec.selector.matchLabels, s.metadata.labels));
    expect(scraped.length).toBe(3);
    // Every role's Service is scraped by one of the endpoints, at /metrics.
    for (const s of scraped) expect(sm.spec.endpoints.some((e) => e.path === '/metrics' && s.spec.ports.some((p) => p.name === e.port))).toBe(true);
  });

  it('prod: CPU HPA and KEDA ScaledObject drive the worker together on the budget-aware signal', () => {
    const r = rendered.prod as Resolved;
    const worker = deploymentOf(r, 'worker');
    expect(worker.spec.replicas).toBeUndefined();
    const hpa = r.objects.find((o) => o.kind === 'HorizontalPodAutoscaler') as K8sObject & {
      spec: {
        scaleTargetRef: { kind: string; name: string };
        minReplicas: number;
        maxReplicas: number;
        metrics: Array<{ type: string; resource?: { name: string; target: { averageUtilization: number } } }>;
      };
    };
    const so = r.objects.find((o) => o.kind === 'ScaledObject') as K8sObject & {
      spec: {
        scaleTargetRef: { name: string };
        minReplicaCount: number;
        maxReplicaCount: number;
        advanced: { horizontalPodAutoscalerConfig: { name: string } };
        triggers: Array<{ type: string; metadata: Record<string, string> }>;
      };
    };
    expect(hpa.spec.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: worker.metadata.name });
    expect(so.spec.scaleTargetRef.name).toBe(worker.metadata.name);
    const cpu = hpa.spec.metrics.find((m) => m.type === 'Resource' && m.resource?.name === 'cpu');
    expect(cpu?.resource?.target.averageUtilization).toBe(70);
    // KEDA adopts the HPA rather than creating a second one that would fight it.
    expect(so.metadata.annotations?.['scaledobject.keda.sh/transfer-hpa-ownership']).toBe('true');
    expect(so.spec.advanced.horizontalPodAutoscalerConfig.name).toBe(hpa.metadata.name);
    expect([so.spec.minReplicaCount, so.spec.maxReplicaCount]).toEqual([hpa.spec.minReplicas, hpa.spec.maxReplicas]);
    expect(so.spec.triggers.find((t) => t.type === 'cpu')?.metadata.value).toBe(String(cpu?.resource?.target.averageUtilization));
    const prom = so.spec.triggers.find((t) => t.type === 'prometheus');
    const query = prom?.metadata.query ?? '';
    const parsed = parsePromql(query);
    expect(parsed.errors).toEqual([]);
    expect(parsed.metrics).toEqual(['tickfleet_venue_runnable_units']);
    expect(parsed.metrics.every(isCatalogMetric)).toBe(true);
    expect(query).toContain(`namespace="${r.namespace}"`);
    expect(Number(prom?.metadata.threshold)).toBeGreaterThan(0);
    // Every worker requests CPU, or a Utilization target has nothing to divide by.
    expect(mainContainer(worker).resources?.requests?.cpu).toBeDefined();
  });

  it('dev: runs Redis and MongoDB in the cluster and points the URLs Secret at them', () => {
    const r = rendered.dev as Resolved;
    const sets = r.objects
      .filter((o) => o.kind === 'StatefulSet')
      .map((o) => o.metadata.name)
      .sort();
    expect(sets).toEqual(['tickfleet-mongodb', 'tickfleet-redis']);
    const secret = r.generated.find((g) => g.name === 'tickfleet-urls');
    expect(secret?.keys.sort()).toEqual(['REDIS_URL', 'TICKFLEET_SINK_URL', 'TICKFLEET_STORE_URL']);
    const k = readFileSync(join(K8S, 'overlays/dev/kustomization.yaml'), 'utf8');
    const services = r.objects.filter((o) => o.kind === 'Service').map((o) => o.metadata.name);
    for (const host of k.matchAll(/(?:redis|mongodb):\/\/([a-z0-9-]+):/g)) expect(services).toContain(host[1]);
    // The Redis the fleet depends on never evicts BullMQ keys.
    const redis = r.objects.find((o) => o.kind === 'StatefulSet' && o.metadata.name === 'tickfleet-redis') as Workload;
    expect(mainContainer(redis).args?.join(' ')).toContain('--maxmemory-policy noeviction');
  });

  it('prod: uses external stores only (no StatefulSet, URLs from the Secret)', () => {
    const r = rendered.prod as Resolved;
    expect(r.objects.filter((o) => o.kind === 'StatefulSet')).toEqual([]);
    expect(r.generated.filter((g) => g.name === 'tickfleet-urls')).toEqual([]);
    expect(r.namespace).toBe('tickfleet');
  });
});

describe('Dockerfile', () => {
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
  const base: Record<string, Resolved> = {};
  beforeAll(() => {
    base.base = resolveKustomization(join(K8S, 'base'), ROOT);
  });

  it('is multi-stage on node:20-bookworm-slim, installs from the lockfile and runs the CLI as a non-root user', () => {
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:20-bookworm-slim$/m);
    expect(dockerfile.match(/^FROM \$\{NODE_IMAGE\} AS \w+$/gm)?.length).toBe(2);
    expect(dockerfile).toMatch(/pnpm install --frozen-lockfile --prod=false/);
    expect(dockerfile).toMatch(/^ENTRYPOINT \["node", "\/app\/apps\/cli\/bin\/tickfleet\.mjs"\]$/m);
    const user = /^USER (\d+):(\d+)$/m.exec(dockerfile);
    expect(Number(user?.[1])).toBeGreaterThan(0);
    for (const role of ['worker', 'scheduler', 'dashboard']) {
      const d = deploymentOf(base.base as Resolved, role);
      expect(d.spec.template.spec.securityContext?.runAsUser).toBe(Number(user?.[1]));
      expect(d.spec.template.spec.securityContext?.runAsNonRoot).toBe(true);
    }
  });

  it('declares the spool volume the worker mounts and exposes the ports the roles listen on', () => {
    const volume = /^VOLUME \["([^"]+)"\]$/m.exec(dockerfile)?.[1];
    const r = base.base as Resolved;
    const worker = mainContainer(deploymentOf(r, 'worker'));
    expect(envValue(r, worker, 'TICKFLEET_SPOOL_DIR')).toBe(volume);
    expect(worker.volumeMounts?.some((m) => m.mountPath === volume)).toBe(true);
    expect(dockerfile).toContain(`TICKFLEET_SPOOL_DIR=${volume}`);
    const exposed = (/^EXPOSE (.+)$/m.exec(dockerfile)?.[1] ?? '').split(/\s+/).map(Number).sort();
    const listening = ['worker', 'scheduler', 'dashboard'].flatMap((role) => mainContainer(deploymentOf(r, role)).ports?.map((p) => p.containerPort) ?? []);
    expect(exposed).toEqual([...new Set(listening)].sort());
  });

  it('keeps local state and dependencies out of the build context', () => {
    const ignore = readFileSync(join(ROOT, '.dockerignore'), 'utf8').split('\n');
    for (const entry of ['**/node_modules', '.git', '.tickfleet']) expect(ignore).toContain(entry);
  });

  it('has an entrypoint CLI that knows every role command the manifests run', () => {
    const res = spawnSync(process.execPath, [join(ROOT, 'apps/cli/bin/tickfleet.mjs'), '--help'], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    expect(res.status).toBe(0);
    for (const role of ['worker', 'scheduler', 'dashboard']) expect(res.stdout).toMatch(new RegExp(`^\\s+${role}\\b`, 'm'));
    const dash = spawnSync(process.execPath, [join(ROOT, 'apps/cli/bin/tickfleet.mjs'), 'dashboard', '--help'], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    expect(dash.stdout).toContain('--port');
  });
});
