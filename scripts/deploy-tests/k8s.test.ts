/**
 * The Kubernetes deploy (deploy/k8s) without a cluster: the base and every overlay are rendered
 * by the real tool, `kubectl kustomize` (kustomize.ts), and what it prints is checked: every
 * object against the Kubernetes (and prometheus-operator, KEDA) JSON schemas of kubernetes-models,
 * every variable a role needs set in its Deployment with a value its env schema accepts, the
 * worker's termination grace period against the shutdown it has to cover, and probes, ports,
 * selectors and autoscalers against what the roles actually serve.
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
import { DEFAULTS, parseConfig } from '@tickfleet/config';
import { WorkerEnv } from '@tickfleet/worker';
import { SchedulerEnv } from '@tickfleet/scheduler';
import { DashboardEnv } from '@tickfleet/dashboard';
import { createRegistry, HealthServer, isCatalogMetric } from '@tickfleet/telemetry';
import { parsePromql, ROOT } from './deploy-files.js';
import { kubectlVersionProblem, kustomizationFiles, loadYamlDocs, renderKustomization, type K8sObject, type Rendered } from './kustomize.js';

const K8S = join(ROOT, 'deploy/k8s');
const FIXTURES = join(ROOT, 'scripts/deploy-tests/fixtures');

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
interface KeyRef {
  name: string;
  key: string;
  optional?: boolean;
}
interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: KeyRef; configMapKeyRef?: KeyRef; fieldRef?: unknown; resourceFieldRef?: unknown };
}
interface EnvFromSource {
  prefix?: string;
  configMapRef?: { name: string; optional?: boolean };
  secretRef?: { name: string; optional?: boolean };
}
interface Probe {
  httpGet?: { path: string; port: string | number };
}
interface Container {
  name: string;
  image?: string;
  args?: string[];
  ports?: Array<{ name?: string; containerPort: number }>;
  env?: EnvVar[];
  envFrom?: EnvFromSource[];
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
type DataObject = K8sObject & { data?: Record<string, string>; stringData?: Record<string, string> };

const ROLES = ['worker', 'scheduler', 'dashboard'] as const;
type Role = (typeof ROLES)[number];
const ROLE_SCHEMAS = { worker: WorkerEnv, scheduler: SchedulerEnv, dashboard: DashboardEnv } as const;

/** The workloads of the three roles (the worker is a StatefulSet, the others Deployments). */
function roleWorkloads(r: Rendered): Workload[] {
  return workloads(r).filter((o) => ROLES.some((role) => o.metadata.name === `tickfleet-${role}`));
}
function workloads(r: Rendered): Workload[] {
  return r.objects.filter((o): o is Workload => o.kind === 'Deployment' || o.kind === 'StatefulSet');
}
function deploymentOf(r: Rendered, role: string): Workload {
  const d = roleWorkloads(r).find((x) => x.metadata.name === `tickfleet-${role}`);
  if (!d) throw new Error(`no tickfleet-${role} Deployment or StatefulSet`);
  return d;
}
/**
 * The container a workload exists for, named like it without `tickfleet-` (`worker` in
 * tickfleet-worker): by name, since a patch naming a container the base lacks puts the new one first.
 */
function mainContainer(d: Workload): Container {
  const name = d.metadata.name.replace(/^tickfleet-/, '');
  const c = d.spec.template.spec.containers.find((x) => x.name === name);
  if (!c) throw new Error(`${d.kind}/${d.metadata.name} has no container named ${name}`);
  return c;
}
function selects(selector: Record<string, string>, labels: Record<string, string> | undefined): boolean {
  return Object.entries(selector).every(([k, v]) => labels?.[k] === v);
}
function portNumber(c: Container, port: string | number): number | undefined {
  return typeof port === 'number' ? port : c.ports?.find((p) => p.name === port)?.containerPort;
}
/** The one namespace of the rendered objects (kustomize's `namespace`), if any. */
function namespaceOf(r: Rendered): string | undefined {
  const namespaces = new Set(r.objects.map((o) => o.metadata.namespace).filter((n) => n !== undefined));
  expect(namespaces.size).toBeLessThanOrEqual(1);
  return [...namespaces][0];
}
/** Keys and values of a rendered ConfigMap or Secret (Secret `data` is base64). */
function dataOf(obj: DataObject): Record<string, string> {
  const data = Object.fromEntries(Object.entries(obj.data ?? {}).map(([k, v]) => [k, obj.kind === 'Secret' ? Buffer.from(v, 'base64').toString('utf8') : v]));
  return { ...data, ...obj.stringData };
}

const DEPLOY_DOC = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8');

/**
 * Secrets docs/deploy.md tells operators to create out of band
 * (`kubectl … create secret generic NAME --from-literal=KEY=VALUE …`), with the example values.
 */
function documentedSecrets(markdown: string): Map<string, Record<string, string>> {
  const secrets = new Map<string, Record<string, string>>();
  for (const m of markdown.matchAll(/create secret generic ([\w-]+)((?:[^\n]*\\\n)*[^\n]*)/g)) {
    const keys: Record<string, string> = {};
    for (const lit of (m[2] ?? '').matchAll(/--from-literal=(\w+)=('[^']*'|"[^"]*"|\S+)/g))
      keys[lit[1] as string] = (lit[2] as string).replace(/^['"]|['"]$/g, '');
    secrets.set(m[1] as string, keys);
  }
  return secrets;
}
const EXTERNAL_SECRETS = documentedSecrets(DEPLOY_DOC);

interface ContainerEnv {
  /** Every variable the container gets, with its value when the rendered output (or the docs' external Secret) has one. */
  values: Map<string, string | undefined>;
  /** References that resolve to nothing: a missing ConfigMap, Secret or key. */
  problems: string[];
}

/**
 * The environment of a container as the kubelet would build it from the rendered objects:
 * `envFrom` sources first, then `env` on top. A Secret absent from the rendered output counts
 * when `external` (the overlay's documented out-of-band Secrets) has it; an optional reference
 * to something absent sets nothing.
 */
function containerEnv(r: Rendered, w: Workload, c: Container, external: Map<string, Record<string, string>>): ContainerEnv {
  const values = new Map<string, string | undefined>();
  const problems: string[] = [];
  const where = `${w.metadata.name}/${c.name}`;
  const source = (kind: 'ConfigMap' | 'Secret', name: string): Record<string, string> | undefined => {
    const obj = r.objects.find((o) => o.kind === kind && o.metadata.name === name) as DataObject | undefined;
    return obj ? dataOf(obj) : kind === 'Secret' ? external.get(name) : undefined;
  };
  for (const from of c.envFrom ?? []) {
    const ref = from.configMapRef ?? from.secretRef;
    if (!ref) continue;
    const kind = from.configMapRef ? 'ConfigMap' : 'Secret';
    const data = source(kind, ref.name);
    if (data === undefined) {
      if (!ref.optional) problems.push(`${where} envFrom: ${kind} ${ref.name} does not exist`);
      continue;
    }
    for (const [k, v] of Object.entries(data)) values.set(`${from.prefix ?? ''}${k}`, v);
  }
  for (const e of c.env ?? []) {
    const ref = e.valueFrom?.secretKeyRef ?? e.valueFrom?.configMapKeyRef;
    if (!ref) {
      values.set(e.name, e.value);
      continue;
    }
    const kind = e.valueFrom?.secretKeyRef ? 'Secret' : 'ConfigMap';
    const data = source(kind, ref.name);
    if (data?.[ref.key] !== undefined) values.set(e.name, data[ref.key]);
    else if (!ref.optional) problems.push(`${where} ${e.name}: ${kind} ${ref.name} ${data ? `has no key ${ref.key}` : 'does not exist'}`);
  }
  return { values, problems };
}

/** Names a container's env sets, references included, whether or not they resolve here (the base leaves the URLs Secret to the overlays). */
function envNames(r: Rendered, c: Container): string[] {
  const names = (c.env ?? []).filter((e) => !(e.valueFrom?.secretKeyRef ?? e.valueFrom?.configMapKeyRef)?.optional).map((e) => e.name);
  for (const from of c.envFrom ?? []) {
    const ref = from.configMapRef ?? from.secretRef;
    const obj =
      ref && (r.objects.find((o) => o.kind === (from.configMapRef ? 'ConfigMap' : 'Secret') && o.metadata.name === ref.name) as DataObject | undefined);
    if (obj) names.push(...Object.keys(dataOf(obj)).map((k) => `${from.prefix ?? ''}${k}`));
  }
  return names;
}
function envValue(r: Rendered, role: Role, name: string): string | undefined {
  const d = deploymentOf(r, role);
  return containerEnv(r, d, mainContainer(d), EXTERNAL_SECRETS).values.get(name);
}

// ---- what each role needs from its Deployment ---------------------------------------------------
/**
 * Defaults in packages/config meant for one machine (`tickfleet up` on a laptop): loopback
 * listeners, a free port picked at random, SQLite files and a spool relative to the working
 * directory. In a pod they would hide the role from the kubelet's probes and from Prometheus,
 * or keep state in a read-only, per-pod root filesystem, so a variable defaulting to one of them
 * must be set by the Deployment.
 */
const MACHINE_LOCAL_DEFAULTS: ReadonlyArray<keyof typeof DEFAULTS> = ['listenHost', 'healthPort', 'storeUrl', 'sinkUrl', 'spoolDir'];
/** Variables that fall under that rule but have no use in the role's pod, and why. */
const NOT_NEEDED_IN_POD: Partial<Record<Role, Record<string, string>>> = {
  dashboard: {
    TICKFLEET_SPOOL_DIR:
      "each worker spools to its own volume claim, which the dashboard pod cannot see; a missing directory reads as nothing spooled, and tickfleet_spool_bytes reports every worker's spool",
  },
};
/** Groups of which one variable must be set: the scheduler's listen port has no schema default and falls back to DEFAULTS.healthPort (run-scheduler.ts). */
const ONE_OF: Partial<Record<Role, string[][]>> = { scheduler: [['TICKFLEET_HEALTH_PORT', 'PORT']] };

/** The variables of a role's env schema that are required, or whose default only works on one machine. */
function varsToSet(role: Role): string[] {
  const local = new Set<unknown>(MACHINE_LOCAL_DEFAULTS.map((k) => DEFAULTS[k]));
  const exempt = NOT_NEEDED_IN_POD[role] ?? {};
  return Object.entries(ROLE_SCHEMAS[role].shape)
    .filter(([name, field]) => {
      const unset = (field as { safeParse(v: unknown): { success: boolean; data?: unknown } }).safeParse(undefined);
      return !(name in exempt) && (!unset.success || local.has(unset.data));
    })
    .map(([name]) => name);
}

/** Variables a role needs that its rendered Deployment does not set. */
function missingEnv(r: Rendered): string[] {
  const missing: string[] = [];
  for (const role of ROLES) {
    const names = envNames(r, mainContainer(deploymentOf(r, role)));
    for (const name of varsToSet(role)) if (!names.includes(name)) missing.push(`${role}: ${name}`);
    for (const group of ONE_OF[role] ?? []) if (!group.some((n) => names.includes(n))) missing.push(`${role}: one of ${group.join(', ')}`);
  }
  return missing;
}

/** Containers a patch added by naming one the base lacks: strategic merge appends them, without an image. */
function containerProblems(r: Rendered): string[] {
  const problems: string[] = [];
  for (const w of workloads(r))
    for (const c of w.spec.template.spec.containers) if (!c.image) problems.push(`${w.kind}/${w.metadata.name} container ${c.name} has no image`);
  for (const role of ROLES) {
    const containers = deploymentOf(r, role).spec.template.spec.containers.map((c) => c.name);
    if (containers.length !== 1) problems.push(`tickfleet-${role} runs containers ${containers.join(', ')}, expected one`);
  }
  return problems;
}

interface WorkerShutdown {
  graceMs: number;
  marginMs: number;
  preStopS: number;
  periodS: number;
  problems: string[];
}

/**
 * The worker's stop sequence in the rendered output: preStop sleep, then SIGTERM, after which the
 * worker exits at the latest TICKFLEET_GRACE_MS (from its env, else the schema's default) plus the
 * margin run-worker.ts adds. terminationGracePeriodSeconds must cover all of it, and not by much
 * more (a stuck pod would linger).
 */
function workerShutdown(r: Rendered): WorkerShutdown {
  const d = deploymentOf(r, 'worker');
  const c = mainContainer(d);
  const graceMs = parseConfig(WorkerEnv.pick({ TICKFLEET_GRACE_MS: true }), {
    TICKFLEET_GRACE_MS: envValue(r, 'worker', 'TICKFLEET_GRACE_MS'),
  }).TICKFLEET_GRACE_MS;
  const source = readFileSync(join(ROOT, 'apps/worker/src/run-worker.ts'), 'utf8');
  const margin = /config\.TICKFLEET_GRACE_MS \+ ([\d_]+)/.exec(source)?.[1];
  if (margin === undefined) throw new Error('apps/worker/src/run-worker.ts: no `config.TICKFLEET_GRACE_MS + <ms>` shutdown limit found');
  const marginMs = Number(margin.replace(/_/g, ''));
  const cmd = c.lifecycle?.preStop?.exec?.command ?? [];
  const preStopS = cmd[0] === 'sleep' ? Number(cmd[1]) : 0;
  const periodS = d.spec.template.spec.terminationGracePeriodSeconds ?? 30;
  const neededS = preStopS + (graceMs + marginMs) / 1000;
  const problems: string[] = [];
  const figures = `preStop ${preStopS} s + TICKFLEET_GRACE_MS ${graceMs / 1000} s + shutdown margin ${marginMs / 1000} s = ${neededS} s`;
  if (periodS < neededS) problems.push(`terminationGracePeriodSeconds ${periodS} is shorter than ${figures}`);
  else if (periodS > neededS + 15) problems.push(`terminationGracePeriodSeconds ${periodS} is over 15 s longer than ${figures}`);
  return { graceMs, marginMs, preStopS, periodS, problems };
}

const OVERLAYS = readdirSync(join(K8S, 'overlays')).sort();
const RENDERS = ['base', ...OVERLAYS];
const rendered: Record<string, Rendered> = {};
const renderDir = (name: string): string => (name === 'base' ? join(K8S, 'base') : join(K8S, 'overlays', name));

describe('kubernetes manifests rendered by kubectl kustomize', () => {
  beforeAll(() => {
    for (const name of RENDERS) rendered[name] = renderKustomization(renderDir(name), ROOT);
  });

  it('renders the base and the dev and prod overlays; every YAML under deploy/k8s is read by one of them', () => {
    expect(OVERLAYS).toEqual(['dev', 'prod']);
    for (const r of Object.values(rendered)) expect(r.objects.length).toBeGreaterThan(5);
    const reached = new Set(RENDERS.flatMap((name) => Object.values(kustomizationFiles(renderDir(name), ROOT)).flat()));
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

  it('fails on a kustomization kubectl rejects, naming it and the patch file at fault', () => {
    expect(() => renderKustomization(join(FIXTURES, 'bad-overlay'), ROOT)).toThrow(
      /^kubectl kustomize scripts\/deploy-tests\/fixtures\/bad-overlay failed \(scripts\/deploy-tests\/fixtures\/bad-overlay\/worker-typo\.yaml\): .*tickfleet-wroker/,
    );
  });

  it('fails with the setup hint, not a skip, when kubectl is not on PATH', () => {
    expect(() => renderKustomization(join(K8S, 'base'), ROOT, { ...process.env, PATH: FIXTURES })).toThrow(
      /^kubectl is not on PATH: run bash scripts\/setup\.sh/,
    );
  });

  it('refuses a kubectl whose built-in kustomize predates the fields deploy/k8s uses', () => {
    const current = spawnSync('kubectl', ['version', '--client', '-o', 'json'], { encoding: 'utf8' });
    expect(kubectlVersionProblem(current.stdout)).toBeUndefined();
    // What Debian bookworm's kubernetes-client (kubectl 1.20, kustomize v2.0.3) prints.
    const bookworm = JSON.stringify({ clientVersion: { major: '1', minor: '20', gitVersion: 'v1.20.2' } });
    expect(kubectlVersionProblem(bookworm)).toMatch(/^kubectl v1\.20\.2 is too old for deploy\/k8s: .*kubectl 1\.22 or newer/);
  });

  it('validates every manifest file document against its Kubernetes schema', () => {
    const files = [...new Set(RENDERS.flatMap((name) => kustomizationFiles(renderDir(name), ROOT).resources))];
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

  it.each(RENDERS)('validates every object of the rendered %s against its schema', (name) => {
    const r = rendered[name] as Rendered;
    const failures = r.objects
      .map((o) => ({ o, res: validateObject(o) }))
      .filter((x) => x.res !== 'ok')
      .map((x) => `${x.o.kind}/${x.o.metadata.name}: ${x.res}`);
    expect(failures).toEqual([]);
  });

  it('catches an invalid manifest (the schemas are really applied)', () => {
    const bad = structuredClone(deploymentOf(rendered.base as Rendered, 'worker'));
    (bad.spec.template.spec.containers[0] as unknown as { ports: unknown[] }).ports = [{ name: 'health', containerPort: '9464' }];
    expect(validateObject(bad)).toMatch(/containerPort must be integer/);
  });

  it.each(RENDERS)('%s: each role runs its CLI command from the tagged image, with only env vars that role reads', (name) => {
    const r = rendered[name] as Rendered;
    expect(containerProblems(r)).toEqual([]);
    for (const role of ROLES) {
      const c = mainContainer(deploymentOf(r, role));
      // A tag proves the kustomization's `images` entry matched (kustomize ignores one that does not).
      expect(c.image).toMatch(/(^|\/)tickfleet:[\w.-]+$/);
      expect(c.args?.[0]).toBe(role);
      const known = Object.keys(ROLE_SCHEMAS[role].shape);
      const names = [...new Set([...(c.env ?? []).map((e) => e.name), ...envNames(r, c)])];
      expect({ role, unknown: names.filter((n) => !known.includes(n)) }).toEqual({ role, unknown: [] });
      expect(names).toContain('TICKFLEET_PREFIX');
    }
    // Inside a pod the servers must listen on all interfaces for the kubelet and Prometheus.
    expect(envValue(r, 'worker', 'TICKFLEET_HEALTH_HOST')).toBe('0.0.0.0');
    expect(envValue(r, 'scheduler', 'TICKFLEET_HEALTH_HOST')).toBe('0.0.0.0');
    expect(envValue(r, 'dashboard', 'TICKFLEET_DASHBOARD_HOST')).toBe('0.0.0.0');
    // Every role sees the same Redis key prefix.
    const prefixes = new Set(ROLES.map((role) => envValue(r, role, 'TICKFLEET_PREFIX')));
    expect(prefixes.size).toBe(1);
  });

  it('derives the variables each role needs from its env schema and the one-machine defaults of packages/config', () => {
    expect(varsToSet('worker')).toEqual(
      expect.arrayContaining([
        'REDIS_URL',
        'TICKFLEET_STORE_URL',
        'TICKFLEET_SINK_URL',
        'TICKFLEET_SPOOL_DIR',
        'TICKFLEET_HEALTH_PORT',
        'TICKFLEET_HEALTH_HOST',
      ]),
    );
    expect(varsToSet('scheduler')).toEqual(expect.arrayContaining(['REDIS_URL', 'TICKFLEET_STORE_URL', 'TICKFLEET_HEALTH_HOST']));
    expect(varsToSet('dashboard')).toEqual(expect.arrayContaining(['REDIS_URL', 'TICKFLEET_STORE_URL', 'TICKFLEET_DASHBOARD_HOST']));
    expect(varsToSet('dashboard')).not.toContain('TICKFLEET_SPOOL_DIR');
    // Exemptions and alternatives name variables the schemas still have (a rename must not leave them dead).
    for (const role of ROLES) {
      const known = Object.keys(ROLE_SCHEMAS[role].shape);
      const listed = [...Object.keys(NOT_NEEDED_IN_POD[role] ?? {}), ...(ONE_OF[role] ?? []).flat()];
      expect({ role, unknown: listed.filter((n) => !known.includes(n)) }).toEqual({ role, unknown: [] });
    }
  });

  it.each(RENDERS)('%s: every variable a role needs is set in its Deployment', (name) => {
    expect(missingEnv(rendered[name] as Rendered)).toEqual([]);
  });

  it.each(OVERLAYS)(
    '%s: every env reference resolves in the rendered output (prod: the Secret docs/deploy.md creates) and each role parses its env',
    (name) => {
      const r = rendered[name] as Rendered;
      const problems: string[] = [];
      for (const w of workloads(r)) for (const c of w.spec.template.spec.containers) problems.push(...containerEnv(r, w, c, EXTERNAL_SECRETS).problems);
      expect(problems).toEqual([]);
      for (const role of ROLES) {
        const d = deploymentOf(r, role);
        const env = Object.fromEntries(containerEnv(r, d, mainContainer(d), EXTERNAL_SECRETS).values);
        expect(() => parseConfig(ROLE_SCHEMAS[role], env)).not.toThrow();
      }
    },
  );

  it.each(RENDERS)('%s: probes use /healthz and /readyz on the port each role listens on', (name) => {
    const r = rendered[name] as Rendered;
    for (const role of ROLES) {
      const c = mainContainer(deploymentOf(r, role));
      expect(c.livenessProbe?.httpGet?.path).toBe('/healthz');
      expect(c.readinessProbe?.httpGet?.path).toBe('/readyz');
      const live = portNumber(c, c.livenessProbe?.httpGet?.port ?? -1);
      const ready = portNumber(c, c.readinessProbe?.httpGet?.port ?? -1);
      const listen =
        role === 'dashboard'
          ? Number(c.args?.[c.args.indexOf('--port') + 1] ?? envValue(r, role, 'TICKFLEET_DASHBOARD_PORT') ?? 3000)
          : Number(envValue(r, role, 'TICKFLEET_HEALTH_PORT'));
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

  it.each(RENDERS)('%s: each worker spools to a volume claim of its own, which outlives its pod', (name) => {
    const r = rendered[name] as Rendered;
    const worker = deploymentOf(r, 'worker') as Workload & {
      spec: {
        serviceName?: string;
        persistentVolumeClaimRetentionPolicy?: Record<string, string>;
        volumeClaimTemplates?: Array<{ metadata: { name: string }; spec: { accessModes: string[]; resources: { requests: { storage: string } } } }>;
      };
    };
    expect(worker.kind).toBe('StatefulSet');
    const spoolDir = envValue(r, 'worker', 'TICKFLEET_SPOOL_DIR');
    const mount = mainContainer(worker).volumeMounts?.find((m) => m.mountPath === spoolDir);
    // The mount is a claim template, never a pod volume (an emptyDir dies with the pod).
    expect(worker.spec.template.spec.volumes?.some((v) => v.name === mount?.name)).toBe(false);
    const claim = worker.spec.volumeClaimTemplates?.find((t) => t.metadata.name === mount?.name);
    expect(claim?.spec.accessModes).toEqual(['ReadWriteOnce']);
    expect(claim?.spec.resources.requests.storage).toBe(name === 'prod' ? '8Gi' : '2Gi');
    expect(worker.spec.persistentVolumeClaimRetentionPolicy).toEqual({ whenScaled: 'Retain', whenDeleted: 'Retain' });
    // The governing Service a StatefulSet needs: the headless one Prometheus scrapes the workers through.
    const svc = r.objects.find((o) => o.kind === 'Service' && o.metadata.name === worker.spec.serviceName) as K8sObject & { spec: { clusterIP?: string } };
    expect(svc?.spec.clusterIP).toBe('None');
  });

  it.each(RENDERS)("%s: the worker's terminationGracePeriodSeconds covers preStop, TICKFLEET_GRACE_MS and the shutdown margin", (name) => {
    const s = workerShutdown(rendered[name] as Rendered);
    expect(s.problems).toEqual([]);
    expect(s.periodS).toBeGreaterThan(s.graceMs / 1000);
    // docs/deploy.md walks through the same figures.
    const hardLimitS = (s.graceMs + s.marginMs) / 1000;
    expect(DEPLOY_DOC).toContain(`\`TICKFLEET_GRACE_MS\` (${s.graceMs / 1000} s)`);
    expect(DEPLOY_DOC).toContain(`grace + ${s.marginMs / 1000} s = ${hardLimitS} s`);
    expect(DEPLOY_DOC).toContain(`\`terminationGracePeriodSeconds: ${s.periodS}\` = ${s.preStopS} + ${hardLimitS}`);
  });

  it('catches drift that kubectl renders without complaint: a container name typo, a missing variable, a grace period too short', () => {
    const r = renderKustomization(join(FIXTURES, 'drifted-overlay'), ROOT);
    expect(containerProblems(r)).toEqual([
      'StatefulSet/tickfleet-worker container wroker has no image',
      'tickfleet-worker runs containers wroker, worker, expected one',
    ]);
    expect(missingEnv(r)).toEqual(['worker: TICKFLEET_HEALTH_HOST']);
    expect(workerShutdown(r).problems).toEqual([
      'terminationGracePeriodSeconds 40 is shorter than preStop 5 s + TICKFLEET_GRACE_MS 60 s + shutdown margin 10 s = 75 s',
    ]);
  });

  it.each(RENDERS)('%s: scheduler runs 2 replicas; Services, PDBs and the ServiceMonitor select existing pods and ports', (name) => {
    const r = rendered[name] as Rendered;
    expect(deploymentOf(r, 'scheduler').spec.replicas).toBe(2);
    const pods = roleWorkloads(r).map((d) => ({ d, labels: d.spec.template.metadata.labels, c: mainContainer(d) }));
    for (const d of roleWorkloads(r)) expect(selects(d.spec.selector.matchLabels, d.spec.template.metadata.labels)).toBe(true);
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
    const r = rendered.prod as Rendered;
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
    expect(hpa.spec.scaleTargetRef).toMatchObject({ kind: 'StatefulSet', name: worker.metadata.name });
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
    expect(query).toContain(`namespace="${namespaceOf(r)}"`);
    expect(Number(prom?.metadata.threshold)).toBeGreaterThan(0);
    // Every worker requests CPU, or a Utilization target has nothing to divide by.
    expect(mainContainer(worker).resources?.requests?.cpu).toBeDefined();
  });

  it('dev: runs Redis and MongoDB in the cluster and points the generated URLs Secret at them', () => {
    const r = rendered.dev as Rendered;
    const sets = r.objects
      .filter((o) => o.kind === 'StatefulSet')
      .map((o) => o.metadata.name)
      .sort();
    expect(sets).toEqual(['tickfleet-mongodb', 'tickfleet-redis', 'tickfleet-worker']);
    // The Secret the worker's REDIS_URL references, as kustomize named it (with its content hash).
    const ref = mainContainer(deploymentOf(r, 'worker')).env?.find((e) => e.name === 'REDIS_URL')?.valueFrom?.secretKeyRef;
    expect(ref?.name).toMatch(/^tickfleet-urls-[a-z0-9]+$/);
    const secret = r.objects.find((o) => o.kind === 'Secret' && o.metadata.name === ref?.name) as DataObject;
    const urls = dataOf(secret);
    expect(Object.keys(urls).sort()).toEqual(['REDIS_URL', 'TICKFLEET_SINK_URL', 'TICKFLEET_STORE_URL']);
    const services = r.objects.filter((o) => o.kind === 'Service').map((o) => o.metadata.name);
    for (const url of Object.values(urls)) expect(services).toContain(new URL(url).hostname);
    // The Redis the fleet depends on never evicts BullMQ keys.
    const redis = r.objects.find((o) => o.kind === 'StatefulSet' && o.metadata.name === 'tickfleet-redis') as Workload;
    expect(mainContainer(redis).args?.join(' ')).toContain('--maxmemory-policy noeviction');
  });

  it('prod: uses external stores only (no store StatefulSet, URLs from the Secret created out of band)', () => {
    const r = rendered.prod as Rendered;
    expect(r.objects.filter((o) => o.kind === 'StatefulSet').map((o) => o.metadata.name)).toEqual(['tickfleet-worker']);
    expect(r.objects.filter((o) => o.kind === 'Secret')).toEqual([]);
    expect(namespaceOf(r)).toBe('tickfleet');
    expect(Object.keys(EXTERNAL_SECRETS.get('tickfleet-urls') ?? {}).sort()).toEqual(['REDIS_URL', 'TICKFLEET_SINK_URL', 'TICKFLEET_STORE_URL']);
  });
});

describe('Dockerfile', () => {
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
  const base: Record<string, Rendered> = {};
  beforeAll(() => {
    base.base = renderKustomization(join(K8S, 'base'), ROOT);
  });

  it('is multi-stage on node:20-bookworm-slim, installs production dependencies from the lockfile and runs the CLI as a non-root user', () => {
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:20-bookworm-slim$/m);
    expect(dockerfile.match(/^FROM \$\{NODE_IMAGE\} AS \w+$/gm)?.length).toBe(2);
    expect(dockerfile).toMatch(/pnpm install --frozen-lockfile --prod --offline/);
    expect(dockerfile).not.toMatch(/--prod=false/);
    expect(dockerfile).toMatch(/^ENTRYPOINT \["node", "\/app\/apps\/cli\/bin\/tickfleet\.mjs"\]$/m);
    const user = /^USER (\d+):(\d+)$/m.exec(dockerfile);
    expect(Number(user?.[1])).toBeGreaterThan(0);
    for (const role of ROLES) {
      const d = deploymentOf(base.base as Rendered, role);
      expect(d.spec.template.spec.securityContext?.runAsUser).toBe(Number(user?.[1]));
      expect(d.spec.template.spec.securityContext?.runAsNonRoot).toBe(true);
    }
  });

  it('declares the spool volume the worker mounts and exposes the ports the roles listen on', () => {
    const volume = /^VOLUME \["([^"]+)"\]$/m.exec(dockerfile)?.[1];
    const r = base.base as Rendered;
    const worker = mainContainer(deploymentOf(r, 'worker'));
    expect(envValue(r, 'worker', 'TICKFLEET_SPOOL_DIR')).toBe(volume);
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
