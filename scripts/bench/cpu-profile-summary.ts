/**
 * Summarises a V8 `.cpuprofile` (as written by `hot-path.ts --cpu-prof DIR`): time per function,
 * inclusive (a function's own samples and everything it called, each sample counted once per
 * function), as a share of the busy time (all samples but `(idle)`), and per unit when given.
 *
 *   node --import tsx scripts/bench/cpu-profile-summary.ts FILE.cpuprofile [--filter TEXT] [--top 60] [--units N] [--areas]
 *
 * `--areas` instead splits the busy time by area: each sample goes to the nearest frame on its
 * stack (from the sampled function outwards) whose file belongs to one of AREAS (job lock, budget,
 * sink, state store, HTTP client, ...), so a socket write lands on whoever asked for it only when
 * no closer area frame (ioredis) is on the stack; `(garbage collector)` and `(program)` are their own.
 * Frames of the CLI's bundle are named by their TypeScript source (through the bundle's source map).
 */
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { fileURLToPath } from 'node:url';
import { positiveIntArg, stringArg } from './fixtures/args.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const args = process.argv.slice(2);
const file = args[0];
if (!file || file.startsWith('--')) {
  process.stderr.write('usage: cpu-profile-summary.ts FILE.cpuprofile [--filter TEXT] [--top 60] [--units N] [--areas]\n');
  process.exit(2);
}
const filter = stringArg(args, 'filter') ?? '';
const top = positiveIntArg(args, 'top', 60);
/** Units the profile covers, for the per-unit columns; 0 (absent): no per-unit columns. */
const units = positiveIntArg(args, 'units', 0);

const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
toSources(profile);
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const selfUs = new Map<number, number>();
profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));

const label = (n: ProfileNode): string =>
  `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.replace(/.*\/(node_modules\/\.pnpm\/)?/, '')}:${n.callFrame.lineNumber}`;
let totalUs = 0;
let idleUs = 0;
const inclusive = new Map<string, number>();
for (const [id, us] of selfUs) {
  totalUs += us;
  if (byId.get(id)!.callFrame.functionName === '(idle)') idleUs += us;
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const key = label(byId.get(cur)!);
    if (seen.has(key)) continue;
    seen.add(key);
    inclusive.set(key, (inclusive.get(key) ?? 0) + us);
  }
}
const busyUs = totalUs - idleUs;

/** Areas by the file of a frame, first match wins (tickfleet's own before the libraries it calls). */
const AREAS: Array<[string, RegExp]> = [
  ["profiler (the benchmark's preload)", /hot-path-cpu-prof|node:inspector/],
  ['job lock', /unit-locks\.ts/],
  ['AIMD outcomes', /outcome-reporter\.ts/],
  ['budget gate', /budget-gate\.ts|budgets-repo\.ts/],
  ['sink pipeline + SQLite sink', /packages\/sinks\//],
  ['state store', /packages\/store\//],
  ['HTTP (undici, venue client)', /undici|venue-http-client\.ts/],
  ['venue adapter', /packages\/venues\//],
  ['unit executor', /unit-executor\.ts/],
  ['venue runner', /venue-runner\.ts/],
  ['bullmq', /bullmq/],
  ['ioredis', /ioredis/],
];
if (args.includes('--areas')) {
  const areas = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const fn = byId.get(id)!.callFrame.functionName;
    if (fn === '(idle)') continue;
    let area = fn === '(garbage collector)' || fn === '(program)' ? fn : 'other';
    for (let cur: number | undefined = id; area === 'other' && cur !== undefined; cur = parent.get(cur)) {
      const url = byId.get(cur)!.callFrame.url;
      area = AREAS.find(([, re]) => re.test(url))?.[0] ?? 'other';
    }
    areas.set(area, (areas.get(area) ?? 0) + us);
  }
  console.log(
    `busy ${(busyUs / 1000).toFixed(0)} ms of ${(totalUs / 1000).toFixed(0)} ms sampled${units ? `, ${(busyUs / 1000 / units).toFixed(2)} ms per unit` : ''}`,
  );
  for (const [area, us] of [...areas].sort((a, b) => b[1] - a[1]))
    console.log(`${((100 * us) / busyUs).toFixed(1).padStart(5)}%${units ? `  ${(us / 1000 / units).toFixed(3)} ms/unit` : ''}  ${area}`);
  process.exit(0);
}
console.log(
  `busy ${(busyUs / 1000).toFixed(0)} ms of ${(totalUs / 1000).toFixed(0)} ms sampled${units ? `, ${(busyUs / 1000 / units).toFixed(2)} ms per unit` : ''}`,
);
for (const [key, us] of [...inclusive]
  .filter(([k]) => k.includes(filter) && !k.startsWith('(root)') && !k.startsWith('(idle)'))
  .sort((a, b) => b[1] - a[1])
  .slice(0, top)) {
  console.log(`${((100 * us) / busyUs).toFixed(1).padStart(5)}%${units ? `  ${(us / 1000 / units).toFixed(3)} ms/unit` : ''}  ${key}`);
}

/**
 * Frames of a bundle (the CLI runs from an esbuild bundle of the sources, apps/cli/bin/cli-bundle.mjs)
 * renamed to their TypeScript source and line through the bundle's source map, so labels and
 * areas name `packages/sinks/src/...` rather than a chunk of the bundle.
 */
function toSources(p: Profile): void {
  const maps = new Map<string, SourceMap | null>();
  for (const { callFrame: f } of p.nodes) {
    if (!f.url.startsWith('file:') || f.lineNumber < 0) continue;
    let map = maps.get(f.url);
    if (map === undefined) {
      const path = `${fileURLToPath(f.url)}.map`;
      map = existsSync(path) ? new SourceMap(JSON.parse(readFileSync(path, 'utf8')) as ConstructorParameters<typeof SourceMap>[0]) : null;
      maps.set(f.url, map);
    }
    const entry = map?.findEntry(f.lineNumber, f.columnNumber) as { originalSource?: string; originalLine?: number } | undefined;
    if (!entry?.originalSource) continue;
    f.url = new URL(entry.originalSource, f.url).href;
    f.lineNumber = entry.originalLine ?? f.lineNumber;
  }
}
