import { isAbsolute, resolve } from 'node:path';
import { ValidationError } from '@tickfleet/core';
import { STORE_DEFAULTS } from '../store-defaults.js';

export type ParsedStoreUrl = { kind: 'sqlite'; path: string } | { kind: 'mongodb'; url: string; database: string };

const ACCEPTED = 'sqlite://<path> (e.g. sqlite://.tickfleet/state.db) or mongodb://host/db / mongodb+srv://host/db';

/**
 * Splits a store URL into an adapter choice. `sqlite://` paths are taken verbatim (a relative path is
 * relative to the working directory, `sqlite:///abs/path` is absolute); MongoDB URLs keep their query
 * string for the driver and name the database in their path (default {@link STORE_DEFAULTS.mongoDatabase}).
 */
export function parseStoreUrl(url: string, cwd: string = process.cwd()): ParsedStoreUrl {
  if (url.startsWith('sqlite://')) {
    const raw = decodePart(url.slice('sqlite://'.length).split('?')[0] ?? '', url);
    if (raw === '') throw new ValidationError('store URL', `a file path after sqlite:// (${ACCEPTED})`, url);
    if (raw === ':memory:') return { kind: 'sqlite', path: raw };
    return { kind: 'sqlite', path: isAbsolute(raw) ? raw : resolve(cwd, raw) };
  }
  if (url.startsWith('mongodb://') || url.startsWith('mongodb+srv://')) {
    // Parsed by hand: seed lists (`mongodb://a:27017,b:27017/db`) are not WHATWG URLs.
    const afterScheme = url.slice(url.indexOf('://') + 3);
    const slash = afterScheme.indexOf('/');
    const hosts = slash === -1 ? afterScheme.split('?')[0] : afterScheme.slice(0, slash);
    if (!hosts) throw new ValidationError('store URL', ACCEPTED, url);
    const dbName = slash === -1 ? '' : decodePart(afterScheme.slice(slash + 1).split('?')[0] ?? '', url);
    if (/[/\\. "$]/.test(dbName)) throw new ValidationError('store URL', 'a MongoDB database name without / \\ . " $ or spaces', dbName);
    return { kind: 'mongodb', url, database: dbName === '' ? STORE_DEFAULTS.mongoDatabase : dbName };
  }
  throw new ValidationError('store URL', ACCEPTED, url);
}

/** Percent-decodes one part of the URL; a malformed escape (`%zz`) is bad input, not a crash. */
function decodePart(part: string, url: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new ValidationError('store URL', `valid percent-escapes (%XX) in ${ACCEPTED}`, url);
  }
}
