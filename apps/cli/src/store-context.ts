import type { Command } from 'commander';
import { openStore, type StateStore } from '@tickfleet/store';
import { storeOpenError } from './edge-errors.js';

/** The `--store` URL given on the root program (env TICKFLEET_STORE_URL, else the shared default store). */
export function storeUrl(cmd: Command): string {
  return (cmd.optsWithGlobals() as { store: string }).store;
}

/** Opens the state store named by `--store`, runs `fn`, and always closes it. */
export async function withStore<T>(cmd: Command, fn: (store: StateStore) => Promise<T>): Promise<T> {
  const url = storeUrl(cmd);
  const store = await openStore(url).catch((err: unknown) => {
    throw storeOpenError(url, err);
  });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}
