import { resolve } from 'node:path';
import { ValidationError } from '@tickfleet/core';
import { JsonlSink, type JsonlSinkOptions } from './adapters/jsonl-sink.js';
import type { MongoSinkOptions } from './adapters/mongo-sink.js';
import { SqliteSink, type SqliteSinkOptions } from './adapters/sqlite-sink.js';
import type { RetryOptions } from './internal/sink-health.js';
import type { Sink } from './sink.js';

export interface OpenSinkOptions {
  /** Retries and degraded threshold of whichever adapter the URL names (its own options below win). */
  retry?: RetryOptions;
  sqlite?: SqliteSinkOptions;
  mongodb?: MongoSinkOptions;
  jsonl?: JsonlSinkOptions;
}

/**
 * Opens the sink a URL names: `sqlite://<path>` (relative or absolute; `sqlite:///abs/path`
 * too), `mongodb://…` / `mongodb+srv://…`, `jsonl://<dir>`. Throws a ValidationError naming
 * `sinkUrl` for anything else. A MongoDB sink opens without a round trip, so a process can
 * start (and spool) while the database is down.
 */
export async function openSink(url: string, options: OpenSinkOptions = {}): Promise<Sink> {
  const scheme = /^([a-z+]+):\/\//.exec(url)?.[1];
  switch (scheme) {
    case 'sqlite':
      return new SqliteSink(localPath(url, 'sqlite://'), { ...options.retry, ...options.sqlite });
    case 'mongodb':
    case 'mongodb+srv': {
      // Loaded only for a MongoDB sink: the driver costs every other process ~0.25 s of startup.
      const { MongoSink } = await import('./adapters/mongo-sink.js');
      try {
        return new MongoSink(url, { ...options.retry, ...options.mongodb });
      } catch (err) {
        throw new ValidationError('sinkUrl', `a MongoDB connection string (${(err as Error).message})`, url);
      }
    }
    case 'jsonl':
      return new JsonlSink(localPath(url, 'jsonl://'), { ...options.retry, ...options.jsonl });
    default:
      throw new ValidationError('sinkUrl', 'a URL starting with sqlite://, mongodb:// or jsonl://', url);
  }
}

function localPath(url: string, prefix: string): string {
  // Percent-escapes are decoded as in the store URL (`sqlite:///tmp/a%20b.db`); a malformed one
  // (`%zz`) is bad input naming the URL, not a URIError.
  let path: string;
  try {
    path = decodeURIComponent(url.slice(prefix.length).split('?')[0] ?? '');
  } catch {
    throw new ValidationError('sinkUrl', `${prefix}<path> with valid percent-escapes (%XX)`, url);
  }
  if (!path) throw new ValidationError('sinkUrl', `${prefix}<path>`, url);
  return path === ':memory:' ? path : resolve(path);
}
