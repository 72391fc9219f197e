// Allowed dependencies between tickfleet's workspace packages, checked by `pnpm run -s deps`
// (depcruise exits non-zero on any violation). Workspace packages are imported by name and
// resolve through their node_modules symlinks, via package.json "exports", to
// packages/<name>/src/... and apps/<name>/src/...; depcruise follows those real paths, so a rule
// on `to.path` sees which package an import lands in. The allowed graph between packages is read
// from each package.json ("dependencies" for production code, plus "devDependencies" for tests),
// so declaring a dependency there is what allows it.
const { readdirSync, readFileSync, existsSync } = require('node:fs');
const { join } = require('node:path');

/** Tests, their fixtures and the repository's scripts: code that never ships in a role. */
const TEST = '(\\.test\\.ts$|^(apps|packages)/[^/]+/test/|^scripts/)';

/** `@tickfleet/<name>` -> `packages/<dir>` or `apps/<dir>`, read from each package.json. */
const workspace = new Map();
for (const group of ['apps', 'packages']) {
  for (const dir of readdirSync(join(__dirname, group))) {
    const manifest = join(__dirname, group, dir, 'package.json');
    if (!existsSync(manifest)) continue;
    const pkg = JSON.parse(readFileSync(manifest, 'utf8'));
    workspace.set(pkg.name, { dir: `${group}/${dir}`, pkg });
  }
}

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const workspaceDirs = (deps) =>
  Object.keys(deps ?? {})
    .filter((name) => workspace.has(name))
    .map((name) => escape(workspace.get(name).dir));

/**
 * One pair of rules per workspace package: its production files may import only the workspace
 * packages in its "dependencies", its tests also those in "devDependencies".
 */
const declaredDependencyRules = [...workspace.values()].flatMap(({ dir, pkg }) => {
  const own = escape(dir);
  const prod = [own, ...workspaceDirs(pkg.dependencies)];
  const test = [...prod, ...workspaceDirs(pkg.devDependencies)];
  return [
    {
      name: `undeclared-dependency:${pkg.name}`,
      comment: `${pkg.name} imports a workspace package missing from its package.json "dependencies"`,
      severity: 'error',
      from: { path: `^${own}/`, pathNot: TEST },
      to: { path: '^(apps|packages)/[^/]+/', pathNot: `^(${prod.join('|')})/` },
    },
    {
      name: `undeclared-dev-dependency:${pkg.name}`,
      comment: `a test of ${pkg.name} imports a workspace package missing from its package.json "dependencies" and "devDependencies"`,
      severity: 'error',
      from: { path: `^${own}/(.*\\.test\\.ts$|test/)` },
      to: { path: '^(apps|packages)/[^/]+/', pathNot: `^(${test.join('|')})/` },
    },
  ];
});

/** scripts/ (benchmarks, chaos and deployment tests) may use what the root package.json declares. */
const root = JSON.parse(readFileSync(join(__dirname, 'package.json'), 'utf8'));
declaredDependencyRules.push({
  name: 'undeclared-dependency:scripts',
  comment: 'a script imports a workspace package missing from the root package.json "devDependencies"',
  severity: 'error',
  from: { path: '^scripts/' },
  to: { path: '^(apps|packages)/[^/]+/', pathNot: `^(${[...workspaceDirs(root.dependencies), ...workspaceDirs(root.devDependencies)].join('|')})/` },
});

/** Files of the CLI that run the venue emulations on purpose (`tickfleet mock-venue`, `tickfleet up --demo`). */
const CLI_DEMO = ['^apps/cli/src/commands/mock-venue\\.ts$', '^apps/cli/src/commands/up\\.ts$'];

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'packages-not-to-apps',
      comment: 'a library in packages/ imports an app (roles build on libraries, never the reverse)',
      severity: 'error',
      from: { path: '^packages/', pathNot: '^packages/venues/' },
      to: { path: '^apps/' },
    },
    {
      name: 'venues-not-to-apps',
      comment: 'packages/venues imports an app: adapters receive what they need (budget gate, clock) from the worker instead of calling back up',
      severity: 'error',
      from: { path: '^packages/venues/' },
      to: { path: '^apps/' },
    },
    {
      name: 'venues-only-core',
      comment:
        'a venue adapter imports a workspace package other than @tickfleet/core: budget, store and queues reach it only through the request hooks the worker passes in',
      severity: 'error',
      from: { path: '^packages/venues/', pathNot: TEST },
      to: { path: '^(apps|packages)/', pathNot: '^packages/(venues|core)/' },
    },
    {
      name: 'budget-not-to-store',
      comment: 'packages/budget imports the store: the store implements the budget interfaces (BudgetsRepo), never the reverse',
      severity: 'error',
      from: { path: '^packages/budget/', pathNot: TEST },
      to: { path: '^packages/store/' },
    },
    {
      name: 'mock-venue-only-in-tests-and-demo',
      comment:
        'the venue emulations are for tests, scripts, the test kit and the CLI demo commands (apps/cli/src/commands/mock-venue.ts, up.ts for --demo) only',
      severity: 'error',
      from: { pathNot: [TEST, '^packages/testkit/', '^packages/mock-venue/', ...CLI_DEMO] },
      to: { path: '^packages/mock-venue/' },
    },
    {
      name: 'testkit-only-in-tests',
      comment: 'production code (apps/ and packages/ other than testkit, outside tests) imports @tickfleet/testkit',
      severity: 'error',
      from: { path: '^(apps|packages)/', pathNot: [TEST, '^packages/testkit/'] },
      to: { path: '^packages/testkit/' },
    },
    {
      name: 'no-foreign-internal',
      comment: "a package imports another package's src/internal/ module: use the other package's exports",
      severity: 'error',
      from: { path: '^(apps|packages)/([^/]+)/' },
      to: { path: '^(apps|packages)/[^/]+/src/(internal|.*/internal)/', pathNot: '^$1/$2/' },
    },
    {
      name: 'production-not-to-tests',
      comment: 'production code imports a test file or a test fixture',
      severity: 'error',
      from: { path: '^(apps|packages)/', pathNot: TEST },
      to: { path: TEST },
    },
    {
      name: 'no-unresolvable',
      comment: 'an import that does not resolve (e.g. a path another package does not export)',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
    ...declaredDependencyRules,
  ],
  options: {
    exclude: { path: '(^|/)node_modules/' },
    doNotFollow: { path: '(^|/)node_modules/' },
    // Type-only imports count: an undeclared package is a dependency even if only its types are used.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default'],
      extensions: ['.ts', '.js', '.mjs', '.cjs', '.json'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
