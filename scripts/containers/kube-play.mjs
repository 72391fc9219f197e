// Runs the rendered dev overlay with `podman kube play` and reports what podman accepted:
//   node scripts/containers/kube-play.mjs          (after scripts/containers/build.sh)
// podman 4.3 plays Deployments (a pod per replica, each containerPort published on the host),
// ConfigMaps and volume claims; it has no Services and does not play StatefulSets. So, and said
// in the report: the dev StatefulSets' Redis and MongoDB (images not reachable here) are replaced
// by containers named like their Services (Debian's redis-server, the MongoDB wire test server
// from this checkout) on one network; the worker StatefulSet is played as a one-replica
// Deployment on the claim its first pod would get; one replica each, on host ports of their own;
// the generated Secret is given as a podman secret. The image `tickfleet:dev` resolves to
// build.sh's localhost/tickfleet:dev. `--keep` leaves the fleet running.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, stringify } from 'yaml';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const NET = 'tickfleet-kube';
const keep = process.argv.includes('--keep');
const sh = (cmd, args, opts = {}) => execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], ...opts });
const tryPodman = (...args) => {
  try {
    return sh('podman', args);
  } catch {
    return undefined;
  }
};
const report = [];
const note = (line) => {
  report.push(line);
  process.stderr.write(`kube-play: ${line}\n`);
};

const rendered = sh('kubectl', ['kustomize', join(ROOT, 'deploy/k8s/overlays/dev')]);
const docs = parseAllDocuments(rendered).map((d) => d.toJS());
const base = sh('bash', [join(ROOT, 'scripts/containers/setup.sh')], { stdio: ['ignore', 'pipe', 'inherit'] }).trim();

const played = [];
const secrets = [];
for (const o of docs) {
  const id = `${o.kind}/${o.metadata.name}`;
  if (o.kind === 'Deployment' || o.kind === 'ConfigMap') played.push(o);
  else if (o.kind === 'Secret') secrets.push(o);
  else if (o.kind === 'StatefulSet' && o.metadata.name === 'tickfleet-worker') {
    // One replica as a Deployment; the spool volume is the claim the template names, as the
    // first pod's claim would be (spool-tickfleet-worker-0).
    const claims = o.spec.volumeClaimTemplates ?? [];
    const pod = structuredClone(o.spec.template);
    pod.spec.volumes = [
      ...(pod.spec.volumes ?? []),
      ...claims.map((c) => ({ name: c.metadata.name, persistentVolumeClaim: { claimName: `${c.metadata.name}-${o.metadata.name}-0` } })),
    ];
    for (const c of claims)
      played.push({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: `${c.metadata.name}-${o.metadata.name}-0` }, spec: c.spec });
    played.push({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: o.metadata, spec: { replicas: 1, selector: o.spec.selector, template: pod } });
    note(
      `${id}: played as a Deployment with claim ${claims.map((c) => `${c.metadata.name}-${o.metadata.name}-0`).join(', ')} (podman 4.3 does not play StatefulSets)`,
    );
  } else if (o.kind === 'StatefulSet')
    note(
      `${id}: not played (no StatefulSets in podman 4.3; image ${o.spec.template.spec.containers[0].image} not reachable): a container named like its Service instead`,
    );
  else note(`${id}: not played (podman kube play has no ${o.kind})`);
}

// Clean slate: a previous run's pods, secrets, stand-ins and network.
const work = mkdtempSync(join(tmpdir(), 'tickfleet-kube-'));
const file = join(work, 'dev.yaml');
const cleanup = () => {
  tryPodman('kube', 'down', file);
  tryPodman('rm', '-f', '-v', '-t', '0', 'tickfleet-redis', 'tickfleet-mongodb');
  for (const s of secrets) tryPodman('secret', 'rm', s.metadata.name);
  for (const o of played) if (o.kind === 'PersistentVolumeClaim') tryPodman('volume', 'rm', '-f', o.metadata.name);
  // podman 4.3 makes an emptyDir a named volume of the volume's name, shared by every pod naming it.
  const emptyDirs = played.flatMap((o) => (o.kind === 'Deployment' ? (o.spec.template.spec.volumes ?? []).filter((v) => v.emptyDir) : []));
  for (const name of new Set(emptyDirs.map((v) => v.name))) tryPodman('volume', 'rm', '-f', name);
  tryPodman('network', 'rm', '-f', NET);
};
// podman publishes every containerPort on the host (a cluster does not): the scheduler's and the
// worker's 9464 would collide, so each gets a host port of its own here.
// Replicas are pods with the same host ports: one of each.
let hostPort = 39_464;
for (const o of played.filter((x) => x.kind === 'Deployment')) {
  if ((o.spec.replicas ?? 1) > 1) note(`Deployment/${o.metadata.name}: 1 of its ${o.spec.replicas} replicas played (each would publish the same host port)`);
  o.spec.replicas = 1;
  for (const c of o.spec.template.spec.containers) for (const p of c.ports ?? []) p.hostPort = hostPort++;
}
note(`containerPorts published on host ports 39464 and up (podman publishes each containerPort on the host)`);
writeFileSync(file, played.map((o) => stringify(o)).join('---\n'));
cleanup();
sh('podman', ['network', 'create', NET]);
// podman reads a secretKeyRef from a podman secret holding the Secret's data as JSON (base64 values).
for (const s of secrets) {
  const path = join(work, `${s.metadata.name}.json`);
  const data = { ...s.data, ...Object.fromEntries(Object.entries(s.stringData ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')])) };
  writeFileSync(path, JSON.stringify(data));
  sh('podman', ['secret', 'create', s.metadata.name, path]);
  note(`Secret/${s.metadata.name}: given as a podman secret (kube play 4.3 stores a played Secret in a form its secretKeyRef cannot read)`);
}
sh('podman', `run -d --name tickfleet-redis --network ${NET} localhost/tickfleet-redis:bookworm --protected-mode no --maxmemory-policy noeviction`.split(' '));
const wire = '--import tsx /repo/packages/mongo-wire/src/bin.ts --port 27017 --host 0.0.0.0';
sh('podman', [
  'run',
  '-d',
  '--name',
  'tickfleet-mongodb',
  '--network',
  NET,
  '-v',
  `${ROOT}:/repo:ro`,
  '-w',
  '/repo',
  '--entrypoint',
  'node',
  base,
  ...wire.split(' '),
]);

let out = '';
try {
  out = sh('podman', ['kube', 'play', '--network', NET, file], { stdio: ['ignore', 'pipe', 'pipe'] });
} catch (err) {
  note(`kube play failed: ${String(err.stderr ?? err.message).trim()}`);
  if (!keep) cleanup();
  process.exit(1);
}
process.stderr.write(out);

// Each role's /readyz from inside its container, once it answers (or 90 s).
const all = sh('podman', ['ps', '-a', '--format', '{{.Names}} {{.Status}}'])
  .split('\n')
  .filter((l) => /^tickfleet-(worker|scheduler|dashboard)-pod/.test(l));
const roles = all.map((l) => l.split(' ')[0]).filter((n) => !n.endsWith('-infra'));
for (const name of roles) {
  const port = name.includes('dashboard') ? 3000 : 9464;
  const check = `for(let i=0;i<90;i++){try{const r=await fetch('http://127.0.0.1:${port}/readyz');if(r.status===200){console.log(200);process.exit(0)}}catch{}await new Promise(r=>setTimeout(r,1000))}console.log('no 200 in 90 s');process.exit(1)`;
  let answer;
  try {
    answer = sh('podman', ['exec', name, 'node', '--input-type=module', '-e', check]).trim();
  } catch (err) {
    answer = `${String(err.stdout ?? '').trim()} ${String(err.stderr ?? '').trim()}`.trim();
  }
  const user = tryPodman('exec', name, 'node', '-e', 'console.log(process.getuid())')?.trim();
  note(`${name}: /readyz ${answer}, uid ${user}`);
}
if (!keep) cleanup();
rmSync(work, { recursive: true, force: true });
process.stdout.write(`${report.join('\n')}\n`);
