import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FixtureError } from './testkit-error.js';

/** The workspace root (the directory holding pnpm-workspace.yaml). */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'pnpm-workspace.yaml'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new FixtureError('repoRoot', 'pnpm-workspace.yaml not found above testkit');
    dir = parent;
  }
  return dir;
}
