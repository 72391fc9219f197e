// The CLI's sources as one cached esbuild bundle, so a `tickfleet` process starts without a
// TypeScript loader: tsx's loader hooks answer every import of the ~200 modules a command loads
// from a second thread, which costs about a second of CPU per process; the bundle loads in a
// third of that (README, Development: "How the CLI starts"). The bundle is rebuilt when any source,
// package manifest or the lockfile changes; npm packages stay outside it, imported from the files
// Node itself would load.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const ENTRY = join(ROOT, 'apps', 'cli', 'src', 'main.ts');
/** Where bundles are kept: `TICKFLEET_CLI_CACHE`, e.g. for an install whose node_modules is read-only. */
const CACHE = process.env.TICKFLEET_CLI_CACHE || join(ROOT, 'node_modules', '.cache', 'tickfleet-cli');

/** Every file whose change must rebuild the bundle, in a stable order. */
function inputs() {
  const files = [join(ROOT, 'pnpm-lock.yaml'), fileURLToPath(import.meta.url)];
  for (const group of ['apps', 'packages']) {
    for (const name of readdirSync(join(ROOT, group)).sort()) {
      const pkg = join(ROOT, group, name);
      if (!existsSync(join(pkg, 'package.json'))) continue;
      files.push(join(pkg, 'package.json'));
      const walk = (dir) => {
        for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
          const path = join(dir, entry.name);
          if (entry.isDirectory()) walk(path);
          else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) files.push(path);
        }
      };
      if (existsSync(join(pkg, 'src'))) walk(join(pkg, 'src'));
    }
  }
  return files;
}

/** The sources' fingerprint: path, size and modification time of every input (a stat each, no reads). */
function fingerprint() {
  const hash = createHash('sha256');
  for (const file of inputs()) {
    const s = statSync(file, { throwIfNoEntry: false });
    hash.update(`${file}\0${s ? `${s.size}:${s.mtimeMs}` : '-'}\n`);
  }
  return hash.digest('hex').slice(0, 16);
}

/**
 * esbuild options: the workspace's TypeScript bundled (split at its dynamic imports, so a command
 * loads only its own group), every npm package external by the absolute URL of the file esbuild
 * resolved (the file Node would load from that source; pnpm keeps each package's dependencies
 * next to it, out of reach of a bundle elsewhere), and `import.meta.url` kept as each source
 * file's own URL (the Lua scripts and the CLI's own entry points are found relative to it).
 */
function buildOptions(outdir, entry = ENTRY) {
  return {
    entryPoints: [entry],
    bundle: true,
    splitting: true,
    platform: 'node',
    // Node's own conditions (import, node, default), not esbuild's extra `module`: the same files Node would load.
    conditions: [],
    format: 'esm',
    target: 'node20',
    outdir,
    outExtension: { '.js': '.mjs' },
    sourcemap: 'linked',
    logLevel: 'silent',
    plugins: [
      {
        name: 'tickfleet-workspace',
        setup(build) {
          build.onResolve({ filter: /^[^./]/ }, async (args) => {
            if (args.path.startsWith('node:') || args.pluginData === 'resolving') return undefined;
            const resolved = await build.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, pluginData: 'resolving' });
            if (resolved.errors.length > 0) return { errors: resolved.errors };
            if (resolved.external || !resolved.path) return { path: args.path, external: true };
            if (!resolved.path.startsWith(join(ROOT, 'node_modules')) || resolved.path.includes(`${join('node_modules', '@tickfleet')}`)) return resolved;
            return { path: pathToFileURL(resolved.path).href, external: true };
          });
          build.onLoad({ filter: /\.ts$/ }, async (args) => {
            const source = await readFile(args.path, 'utf8');
            // Anything else of import.meta would answer for the bundle's directory: no bundle then.
            const other = /import\.meta\.(?!url\b)\w+/.exec(source);
            if (other) return { errors: [{ text: `${other[0]} in ${args.path}: only import.meta.url is kept in the bundle` }] };
            return { contents: source.replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href)), loader: 'ts' };
          });
        },
      },
    ],
  };
}

/** Builds the bundle for `key` unless it is there; its entry file, or undefined when it cannot be built here. */
async function bundleFor(key) {
  const dir = join(CACHE, key);
  const entry = join(dir, 'main.mjs');
  if (existsSync(entry)) return entry;
  const { build } = await import('esbuild');
  // Built aside and renamed into place: processes starting together never see half a bundle.
  const tmp = join(CACHE, `${key}.${process.pid}.tmp`);
  mkdirSync(CACHE, { recursive: true });
  try {
    await build(buildOptions(tmp));
    renameSync(tmp, dir);
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    // Another process renamed its copy first: use it.
    if (existsSync(entry)) return entry;
    throw err;
  }
  // Bundles of older sources, once no process can still be loading chunks of them (a worker
  // started before a change imports some of its modules later), and builds that died halfway.
  for (const old of readdirSync(CACHE)) {
    // Only what this file puts there (the directory may be one the user chose).
    if (!/^[0-9a-f]{16}(\.\d+\.tmp)?$/.test(old)) continue;
    const path = join(CACHE, old);
    const ageMs = Date.now() - (statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
    if (old !== key && ageMs > (old.endsWith('.tmp') ? 3_600_000 : 7 * 86_400_000)) rmSync(path, { recursive: true, force: true });
  }
  return entry;
}

/**
 * Runs the CLI from the bundle. `TICKFLEET_CLI_BUNDLE` chooses: unset, the bundle when it can be
 * built and stored here, else tsx's loader (a read-only install never run once, an unwritable
 * node_modules); `0`, always tsx; `1`, the bundle or an error naming why it cannot be built (the
 * tests run this way, so a source the bundle cannot hold fails them instead of slowing every start).
 */
export async function runCli() {
  const mode = process.env.TICKFLEET_CLI_BUNDLE;
  let entry;
  if (mode !== '0') {
    try {
      entry = await bundleFor(fingerprint());
    } catch (err) {
      if (mode === '1') {
        process.stderr.write(`tickfleet: cannot build the CLI bundle (TICKFLEET_CLI_BUNDLE=1): ${err instanceof Error ? err.message : String(err)}\n`);
        process.exit(1);
      }
    }
  }
  if (entry) {
    // Stack traces name the TypeScript sources, as under tsx.
    process.setSourceMapsEnabled(true);
    await import(pathToFileURL(entry).href);
    return;
  }
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/main.ts');
}

export { buildOptions, fingerprint, CACHE };
