/**
 * Renders kustomizations with the real tool: `kubectl kustomize <dir>`, kubectl's built-in
 * kustomize, which needs no cluster and produces exactly what `kubectl apply -k` would send.
 * kubectl comes from scripts/setup.sh; without it, or with one too old for the fields deploy/k8s
 * uses, rendering fails with what to install instead of skipping. A kustomization kubectl rejects
 * fails naming its directory and, when kubectl names an object (a patch target it cannot find),
 * the files of that kustomization that declare the object.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseAllDocuments } from 'yaml';

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [key: string]: unknown;
}

/** What `kubectl kustomize` printed for one kustomization directory, parsed. */
export interface Rendered {
  objects: K8sObject[];
}

/** The files a kustomization tree reads, relative to the repository root. */
export interface KustomizationFiles {
  kustomizations: string[];
  /** Manifests listed under `resources` (whole objects). */
  resources: string[];
  /** Strategic-merge or JSON6902 patch files listed under `patches[].path` (fragments). */
  patches: string[];
}

/**
 * The oldest kubectl whose built-in kustomize knows every field deploy/k8s uses: `labels` came
 * with kustomize v4.1, first embedded in kubectl 1.22 (1.20, Debian bookworm's
 * kubernetes-client, embeds kustomize v2.0.3, which also lacks `patches`).
 */
const MIN_KUBECTL_MINOR = 22;
const INSTALL_HINT = 'run bash scripts/setup.sh, which installs kubectl with apt (Debian package kubernetes-client) when it is missing';

function parseDocs(text: string, where: string): unknown[] {
  const docs = parseAllDocuments(text);
  for (const d of docs) if (d.errors.length > 0) throw new Error(`${where}: ${d.errors[0]?.message}`);
  return docs.map((d) => d.toJS() as unknown).filter((d) => d !== null);
}

export function loadYamlDocs(file: string): unknown[] {
  return parseDocs(readFileSync(file, 'utf8'), file);
}

function kubectl(args: string[], env: NodeJS.ProcessEnv): { status: number | null; stdout: string; stderr: string } {
  const res = spawnSync('kubectl', args, { encoding: 'utf8', env, maxBuffer: 64 * 1024 * 1024 });
  if (res.error && (res.error as NodeJS.ErrnoException).code === 'ENOENT') throw new Error(`kubectl is not on PATH: ${INSTALL_HINT}`);
  if (res.error) throw res.error;
  return { status: res.status, stdout: res.stdout, stderr: res.stderr };
}

/** Why the kubectl that printed `versionJson` (`kubectl version --client -o json`) cannot render deploy/k8s, or undefined when it can. */
export function kubectlVersionProblem(versionJson: string): string | undefined {
  let parsed: { clientVersion?: { major?: string; minor?: string; gitVersion?: string }; kustomizeVersion?: string };
  try {
    parsed = JSON.parse(versionJson) as typeof parsed;
  } catch {
    return `kubectl version --client -o json printed no JSON: ${versionJson.slice(0, 200)}`;
  }
  const major = Number.parseInt(parsed.clientVersion?.major ?? '', 10);
  const minor = Number.parseInt(parsed.clientVersion?.minor ?? '', 10);
  if (major === 1 && minor >= MIN_KUBECTL_MINOR) return undefined;
  const embedded = parsed.kustomizeVersion ? ` (kustomize ${parsed.kustomizeVersion})` : '';
  return (
    `kubectl ${parsed.clientVersion?.gitVersion ?? 'of unknown version'}${embedded} is too old for deploy/k8s: its built-in kustomize ` +
    `predates the \`labels\` field, which needs kubectl 1.${MIN_KUBECTL_MINOR} or newer ` +
    `(Debian 12's kubernetes-client is 1.20): install a newer kubectl, such as the Kubernetes project's own package, and put it first on PATH`
  );
}

const checkedPaths = new Set<string>();

function checkKubectl(env: NodeJS.ProcessEnv): void {
  const key = env.PATH ?? '';
  if (checkedPaths.has(key)) return;
  const res = kubectl(['version', '--client', '-o', 'json'], env);
  const problem = res.status === 0 ? kubectlVersionProblem(res.stdout) : `kubectl version --client failed: ${res.stderr.trim()}`;
  if (problem) throw new Error(problem);
  checkedPaths.add(key);
}

function kustomizationFile(dir: string): string | undefined {
  return ['kustomization.yaml', 'kustomization.yml', 'Kustomization'].map((f) => join(dir, f)).find((f) => existsSync(f));
}

/**
 * The files the kustomization in `dir` reads through `resources` (directories followed),
 * `components` and `patches[].path`. Entries that do not exist are left to kubectl to report.
 */
export function kustomizationFiles(dir: string, root: string): KustomizationFiles {
  const out: KustomizationFiles = { kustomizations: [], resources: [], patches: [] };
  const kfile = kustomizationFile(dir);
  if (kfile === undefined) return out;
  out.kustomizations.push(relative(root, kfile));
  const k = (loadYamlDocs(kfile)[0] ?? {}) as { resources?: string[]; components?: string[]; patches?: Array<{ path?: string }> };
  for (const res of [...(k.resources ?? []), ...(k.components ?? [])]) {
    const path = join(dir, res);
    if (res.includes('://') || !existsSync(path)) continue;
    if (statSync(path).isDirectory()) {
      const sub = kustomizationFiles(path, root);
      out.kustomizations.push(...sub.kustomizations);
      out.resources.push(...sub.resources);
      out.patches.push(...sub.patches);
    } else {
      out.resources.push(relative(root, path));
    }
  }
  for (const p of k.patches ?? []) if (p.path !== undefined && existsSync(join(dir, p.path))) out.patches.push(relative(root, join(dir, p.path)));
  return out;
}

/**
 * Files of the kustomization tree declaring the objects kubectl's error names by kustomize id
 * (`Deployment.v1.apps/tickfleet-wroker.[noNs]`, `ConfigMap.v1.[noGrp]/x.[noNs]`): for a patch whose target is missing, the patch.
 */
function filesDeclaring(message: string, dir: string, root: string): string[] {
  const ids = [...message.matchAll(/\b([A-Z]\w*)\.[\w.[\]]*\/([a-z0-9][a-z0-9.-]*)\.\[/g)].map((m) => ({ kind: m[1], name: m[2] }));
  if (ids.length === 0) return [];
  const files = kustomizationFiles(dir, root);
  const found = new Set<string>();
  for (const file of [...files.patches, ...files.resources]) {
    let docs: unknown[];
    try {
      docs = loadYamlDocs(join(root, file));
    } catch {
      continue;
    }
    for (const doc of docs as Array<Partial<K8sObject>>) if (ids.some((id) => doc.kind === id.kind && doc.metadata?.name === id.name)) found.add(file);
  }
  return [...found];
}

/** kubectl's error text without klog's framing (`E1126 12:15:03.458598 15038 run.go:72] "command failed" err="…"`). */
function kubectlError(stderr: string): string {
  const err = /err="((?:[^"\\]|\\.)*)"/.exec(stderr)?.[1];
  if (err === undefined) return stderr.trim().replace(/^error: /, '');
  try {
    return JSON.parse(`"${err}"`) as string;
  } catch {
    return err;
  }
}

/**
 * `kubectl kustomize dir`, parsed into its objects. Throws with the install hint when kubectl is
 * missing or too old, and with kubectl's message, the kustomization and the files at fault when
 * kubectl rejects it.
 */
export function renderKustomization(dir: string, root: string, env: NodeJS.ProcessEnv = process.env): Rendered {
  checkKubectl(env);
  const where = relative(root, dir);
  const res = kubectl(['kustomize', dir], env);
  if (res.status !== 0) {
    // kubectl's own message names the object, not the file: add the files that declare it.
    const message = kubectlError(res.stderr);
    const files = filesDeclaring(message, dir, root);
    throw new Error(`kubectl kustomize ${where} failed${files.length > 0 ? ` (${files.join(', ')})` : ''}: ${message}`);
  }
  const objects = parseDocs(res.stdout, `kubectl kustomize ${where}`) as K8sObject[];
  for (const o of objects)
    if (!o.apiVersion || !o.kind || !o.metadata?.name) throw new Error(`kubectl kustomize ${where}: an object without apiVersion, kind or metadata.name`);
  return { objects };
}
