import { existsSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { repoRoot, runCli, tempDir } from '@tickfleet/testkit';
// @ts-expect-error: plain JavaScript (the CLI's launcher runs before any TypeScript loader), no types
import { buildOptions, CACHE, fingerprint } from '../bin/cli-bundle.mjs';

/**
 * The `tickfleet` launcher runs the CLI from a cached esbuild bundle of the sources
 * (apps/cli/bin/cli-bundle.mjs), or through tsx's loader. Every other CLI test runs the bundle
 * (testkit sets TICKFLEET_CLI_BUNDLE=1); these check that it is the current sources' bundle,
 * that both ways answer alike, and what the bundle keeps of `import.meta`.
 */
describe('the CLI bundle', () => {
  it('is built for the current sources, with a source map naming them', async () => {
    const r = await runCli(['--help']);
    expect(r.code).toBe(0);
    const dir = join(CACHE as string, (fingerprint as () => string)());
    expect(existsSync(join(dir, 'main.mjs'))).toBe(true);
    const map = JSON.parse(readFileSync(join(dir, 'main.mjs.map'), 'utf8')) as { sources: string[] };
    expect(map.sources.some((s) => s.endsWith('apps/cli/src/main.ts'))).toBe(true);
  });

  it('gets another key when a source changes', () => {
    const key = fingerprint as () => string;
    const source = join(repoRoot(), 'packages', 'core', 'src', 'duration.ts');
    // Put back as exactly as utimes can (to the microsecond): at worst one more build of the same sources.
    const { atimeMs, mtimeMs } = statSync(source);
    const before = key();
    try {
      utimesSync(source, atimeMs / 1000, mtimeMs / 1000 + 1);
      expect(key()).not.toBe(before);
    } finally {
      utimesSync(source, atimeMs / 1000, mtimeMs / 1000);
    }
  });

  it('answers as the sources run through tsx do', async () => {
    for (const args of [['--help'], ['connectors', '--help'], ['worker', '--help'], ['--store', 'nope://x', 'connectors', 'list']]) {
      const bundled = await runCli(args);
      const tsx = await runCli(args, { env: { TICKFLEET_CLI_BUNDLE: '0' } });
      expect({ args, code: bundled.code, stdout: bundled.stdout, stderr: bundled.stderr }).toEqual({
        args,
        code: tsx.code,
        stdout: tsx.stdout,
        stderr: tsx.stderr,
      });
    }
  });

  it('falls back to tsx when the bundle cannot be stored, and fails so with TICKFLEET_CLI_BUNDLE=1', async () => {
    const dir = tempDir('tickfleet-cli-cache-');
    try {
      // A cache directory under a plain file: it can never be created (ENOTDIR, even as root).
      writeFileSync(dir.file('file'), '');
      const cache = join(dir.file('file'), 'cache');
      const args = ['connectors', '--help'];
      const unset = await runCli(args, { env: { TICKFLEET_CLI_BUNDLE: undefined, TICKFLEET_CLI_CACHE: cache } });
      const tsx = await runCli(args, { env: { TICKFLEET_CLI_BUNDLE: '0' } });
      expect(tsx.code).toBe(0);
      expect({ code: unset.code, stdout: unset.stdout, stderr: unset.stderr }).toEqual({ code: tsx.code, stdout: tsx.stdout, stderr: tsx.stderr });
      const strict = await runCli(args, { env: { TICKFLEET_CLI_CACHE: cache } });
      expect(strict.code).toBe(1);
      expect(strict.stdout).toBe('');
      expect(strict.stderr).toMatch(/^tickfleet: cannot build the CLI bundle \(TICKFLEET_CLI_BUNDLE=1\): .*ENOTDIR/);
    } finally {
      dir.remove();
    }
  });

  it("keeps each source's import.meta.url and refuses the rest of import.meta", async () => {
    const dir = tempDir('tickfleet-cli-bundle-');
    try {
      const good = dir.file('good.ts');
      writeFileSync(good, 'export const here: string = import.meta.url;\n');
      await build({ ...buildOptions(dir.file('out-good'), good), splitting: false });
      const { here } = (await import(pathToFileURL(dir.file('out-good/good.mjs')).href)) as { here: string };
      expect(here).toBe(pathToFileURL(good).href);

      const bad = dir.file('bad.ts');
      writeFileSync(bad, 'export const where: string = import.meta.dirname;\n');
      await expect(build({ ...buildOptions(dir.file('out-bad'), bad), splitting: false })).rejects.toThrow(
        /import\.meta\.dirname in .*bad\.ts: only import\.meta\.url/,
      );
    } finally {
      dir.remove();
    }
  });
});
