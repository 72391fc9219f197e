/**
 * A small kustomize resolver for the deploy tests (no kubectl or kustomize binary here): reads a
 * kustomization.yaml, loads its resources recursively, applies its strategic-merge patches and
 * JSON6902 patches the way kustomize does for the shapes tickfleet uses (maps merged, lists of
 * named items merged by `name`, `$patch` directives not supported), records generated Secrets and
 * ConfigMaps, and throws with the file at fault when a referenced file is missing or a patch
 * targets an object that does not exist.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseAllDocuments } from 'yaml';

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [key: string]: unknown;
}

export interface Resolved {
  dir: string;
  namespace?: string;
  objects: K8sObject[];
  /** Secrets and ConfigMaps from secretGenerator / configMapGenerator, with their keys. */
  generated: Array<{ kind: 'Secret' | 'ConfigMap'; name: string; keys: string[] }>;
  /** Every file the kustomization read (resources and patches), relative to the repo. */
  files: string[];
  /** Image names the kustomization rewrites. */
  images: Array<{ name: string; newName?: string; newTag?: string }>;
}

interface Kustomization {
  apiVersion?: string;
  kind?: string;
  namespace?: string;
  resources?: string[];
  patches?: Array<{ path?: string; patch?: string; target?: { group?: string; version?: string; kind?: string; name?: string } }>;
  secretGenerator?: Array<{ name: string; literals?: string[]; files?: string[]; envs?: string[] }>;
  configMapGenerator?: Array<{ name: string; literals?: string[]; files?: string[]; envs?: string[] }>;
  images?: Array<{ name: string; newName?: string; newTag?: string }>;
  labels?: Array<{ pairs: Record<string, string>; includeSelectors?: boolean }>;
}

const ALLOWED_KEYS = new Set(['apiVersion', 'kind', 'namespace', 'resources', 'patches', 'secretGenerator', 'configMapGenerator', 'images', 'labels']);

export function loadYamlDocs(file: string): unknown[] {
  const docs = parseAllDocuments(readFileSync(file, 'utf8'));
  for (const d of docs) if (d.errors.length > 0) throw new Error(`${file}: ${d.errors[0]?.message}`);
  return docs.map((d) => d.toJS() as unknown).filter((d) => d !== null);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Strategic merge as kustomize does it for these shapes: maps deep-merge, named lists merge by name. */
export function strategicMerge(base: unknown, patch: unknown, where: string): unknown {
  if (isObject(base) && isObject(patch)) {
    const out: Record<string, unknown> = { ...base };
    for (const [k, v] of Object.entries(patch)) out[k] = k in base ? strategicMerge(base[k], v, `${where}.${k}`) : v;
    return out;
  }
  if (Array.isArray(base) && Array.isArray(patch) && patch.every((p) => isObject(p) && typeof p.name === 'string')) {
    const out = [...base] as unknown[];
    for (const p of patch as Array<Record<string, unknown>>) {
      const i = out.findIndex((b) => isObject(b) && b.name === p.name);
      if (i >= 0) out[i] = strategicMerge(out[i], p, `${where}[${String(p.name)}]`);
      else out.push(p);
    }
    return out;
  }
  return patch;
}

/** Named list items a patch merges into must exist in the target (a typo would add a new one). */
export function namedItemsMissing(base: unknown, patch: unknown, where: string, allowNew: (path: string) => boolean): string[] {
  const missing: string[] = [];
  if (isObject(base) && isObject(patch)) {
    for (const [k, v] of Object.entries(patch)) if (k in base) missing.push(...namedItemsMissing(base[k], v, `${where}.${k}`, allowNew));
  } else if (Array.isArray(base) && Array.isArray(patch)) {
    for (const p of patch) {
      if (!isObject(p) || typeof p.name !== 'string') continue;
      const b = base.find((x) => isObject(x) && x.name === p.name);
      if (b === undefined) {
        if (!allowNew(where)) missing.push(`${where}[${p.name}]`);
      } else {
        missing.push(...namedItemsMissing(b, p, `${where}[${p.name}]`, allowNew));
      }
    }
  }
  return missing;
}

function applyJson6902(target: K8sObject, ops: unknown, where: string): K8sObject {
  if (!Array.isArray(ops)) throw new Error(`${where}: a JSON6902 patch must be a list of operations`);
  const copy = structuredClone(target);
  for (const op of ops as Array<{ op: string; path: string; value?: unknown }>) {
    const parts = op.path
      .split('/')
      .slice(1)
      .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
    const last = parts.pop();
    let node: unknown = copy;
    for (const p of parts) {
      node = Array.isArray(node) ? node[Number(p)] : isObject(node) ? node[p] : undefined;
      if (node === undefined) throw new Error(`${where}: path ${op.path} does not exist in ${target.kind}/${target.metadata.name}`);
    }
    if (last === undefined || !isObject(node)) throw new Error(`${where}: unsupported path ${op.path}`);
    if (op.op === 'remove') {
      if (!(last in node)) throw new Error(`${where}: cannot remove ${op.path}: absent from ${target.kind}/${target.metadata.name}`);
      delete node[last];
    } else if (op.op === 'replace' || op.op === 'add') {
      if (op.op === 'replace' && !(last in node)) throw new Error(`${where}: cannot replace ${op.path}: absent`);
      node[last] = op.value;
    } else {
      throw new Error(`${where}: unsupported op ${op.op}`);
    }
  }
  return copy;
}

function generatorKeys(gen: { literals?: string[]; files?: string[]; envs?: string[] }, dir: string, where: string): string[] {
  const keys = (gen.literals ?? []).map((l) => l.split('=')[0] ?? '');
  for (const f of gen.files ?? []) {
    const [key, path] = f.includes('=') ? (f.split('=') as [string, string]) : [f.split('/').pop() ?? f, f];
    if (!existsSync(join(dir, path))) throw new Error(`${where}: generator file ${path} does not exist`);
    keys.push(key);
  }
  for (const e of gen.envs ?? []) {
    if (!existsSync(join(dir, e))) throw new Error(`${where}: generator env file ${e} does not exist`);
    for (const line of readFileSync(join(dir, e), 'utf8').split('\n')) if (/^\w+=/.test(line)) keys.push(line.split('=')[0] ?? '');
  }
  return keys;
}

export function resolveKustomization(dir: string, root: string): Resolved {
  const kfile = join(dir, 'kustomization.yaml');
  if (!existsSync(kfile)) throw new Error(`${relative(root, dir)}: no kustomization.yaml`);
  const k = loadYamlDocs(kfile)[0] as Kustomization;
  const where = relative(root, kfile);
  if (k.kind !== 'Kustomization' || k.apiVersion !== 'kustomize.config.k8s.io/v1beta1')
    throw new Error(`${where}: not a kustomize.config.k8s.io/v1beta1 Kustomization`);
  for (const key of Object.keys(k)) if (!ALLOWED_KEYS.has(key)) throw new Error(`${where}: field ${key} is not handled by this resolver`);
  const out: Resolved = { dir, objects: [], generated: [], files: [where], images: [...(k.images ?? [])], ...(k.namespace ? { namespace: k.namespace } : {}) };

  for (const res of k.resources ?? []) {
    const path = join(dir, res);
    if (!existsSync(path)) throw new Error(`${where}: resource ${res} does not exist`);
    if (statSync(path).isDirectory()) {
      const sub = resolveKustomization(path, root);
      out.objects.push(...sub.objects);
      out.generated.push(...sub.generated);
      out.files.push(...sub.files);
      out.images.push(...sub.images);
    } else {
      out.files.push(relative(root, path));
      for (const doc of loadYamlDocs(path)) {
        const obj = doc as K8sObject;
        if (!obj.apiVersion || !obj.kind || !obj.metadata?.name)
          throw new Error(`${relative(root, path)}: a document without apiVersion, kind or metadata.name`);
        out.objects.push(obj);
      }
    }
  }
  for (const gen of k.secretGenerator ?? []) out.generated.push({ kind: 'Secret', name: gen.name, keys: generatorKeys(gen, dir, where) });
  for (const gen of k.configMapGenerator ?? []) out.generated.push({ kind: 'ConfigMap', name: gen.name, keys: generatorKeys(gen, dir, where) });

  for (const [i, p] of (k.patches ?? []).entries()) {
    const pw = `${where} patches[${i}]`;
    if (p.path !== undefined) {
      const path = join(dir, p.path);
      if (!existsSync(path)) throw new Error(`${pw}: patch file ${p.path} does not exist`);
      out.files.push(relative(root, path));
      for (const doc of loadYamlDocs(path)) {
        const patch = doc as K8sObject;
        const idx = out.objects.findIndex((o) => o.kind === patch.kind && o.metadata.name === patch.metadata?.name && o.apiVersion === patch.apiVersion);
        if (idx < 0) throw new Error(`${pw}: ${p.path} patches ${patch.apiVersion} ${patch.kind}/${patch.metadata?.name}, which the resources do not define`);
        const target = out.objects[idx] as K8sObject;
        // Patches may add env vars and volumes; any other named item (a container, a port) must exist.
        const missing = namedItemsMissing(target, patch, `${patch.kind}/${patch.metadata.name}`, (w) => /\.(env|volumes|volumeMounts)$/.test(w));
        if (missing.length > 0) throw new Error(`${pw}: ${p.path} merges into items the target lacks: ${missing.join(', ')}`);
        out.objects[idx] = strategicMerge(target, patch, p.path) as K8sObject;
      }
    } else if (p.patch !== undefined && p.target) {
      const t = p.target;
      const matches = out.objects
        .map((o, idx) => ({ o, idx }))
        .filter(
          ({ o }) =>
            (!t.kind || o.kind === t.kind) &&
            (!t.name || o.metadata.name === t.name) &&
            (!t.group || o.apiVersion.startsWith(`${t.group}/`)) &&
            (!t.version || o.apiVersion.endsWith(`/${t.version}`) || o.apiVersion === t.version),
        );
      if (matches.length === 0) throw new Error(`${pw}: target ${t.kind}/${t.name} matches no object`);
      const ops = loadYamlDocsFromText(p.patch, pw);
      for (const { o, idx } of matches) out.objects[idx] = applyJson6902(o, ops, pw);
    } else {
      throw new Error(`${pw}: needs a path, or an inline patch with a target`);
    }
  }
  for (const img of k.images ?? []) {
    const used = out.objects.some((o) => JSON.stringify(o).includes(`"image":"${img.name}"`));
    if (!used) throw new Error(`${where}: images entry ${img.name} matches no container image`);
  }
  if (k.namespace) for (const o of out.objects) if (o.kind !== 'Namespace') o.metadata = { ...o.metadata, namespace: k.namespace };
  return out;
}

function loadYamlDocsFromText(text: string, where: string): unknown {
  const docs = parseAllDocuments(text);
  if (docs.length !== 1 || (docs[0]?.errors.length ?? 0) > 0) throw new Error(`${where}: inline patch is not one YAML document`);
  return docs[0]?.toJS();
}
