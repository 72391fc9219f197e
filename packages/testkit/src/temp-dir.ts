import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TempDir {
  path: string;
  /** A path inside the directory. */
  file(name: string): string;
  /** `sqlite://<dir>/<name>` */
  sqliteUrl(name?: string): string;
  remove(): void;
}

/** A fresh directory under the OS temp dir; `remove()` deletes it and everything in it. */
export function tempDir(prefix = 'tickfleet-test-'): TempDir {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return {
    path,
    file: (name) => join(path, name),
    sqliteUrl: (name = 'state.db') => `sqlite://${join(path, name)}`,
    remove: () => rmSync(path, { recursive: true, force: true }),
  };
}
