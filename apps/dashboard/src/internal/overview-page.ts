import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { NotFoundError } from '@tickfleet/core';
import type { StaticAsset } from './chart-assets.js';

/**
 * The overview's sources, read from this package's src/client/ where they are checked like the
 * rest: a static HTML shell, a stylesheet, and the script as TypeScript browser code. Found from
 * this file's URL, which the CLI's bundle keeps as the source file's own.
 */
const CLIENT = new URL('../client/', import.meta.url);

/** What the page's script needs from the server, carried in the page as JSON (`#overview-config`). */
export interface OverviewConfig {
  /** Where bull-board is mounted: each venue links to its queue there. */
  queuesPath: string;
  /** How often the page polls `api/status`. */
  refreshMs: number;
  /** How often it redraws the charts from `api/history`. */
  historyRefreshMs: number;
  /** How often the dashboard samples the history (the page says so). */
  historyIntervalMs: number;
  readOnly: boolean;
}

/** The shell's empty JSON element that {@link overviewPage} fills. */
const CONFIG_ELEMENT = '<script type="application/json" id="overview-config"></script>';

let shell: string | undefined;

/**
 * The fleet overview (src/client/overview.html) with its configuration in it as data. The script
 * and stylesheet it loads are {@link overviewAssets}; uPlot's are chart-assets.ts'. No request goes
 * to another origin.
 */
export function overviewPage(options: { queuesPath: string; refreshMs: number; historyIntervalMs: number; readOnly: boolean }): string {
  shell ??= readFileSync(new URL('overview.html', CLIENT), 'utf8');
  if (!shell.includes(CONFIG_ELEMENT)) throw new NotFoundError('configuration element of src/client/overview.html', CONFIG_ELEMENT);
  const config: OverviewConfig = {
    queuesPath: options.queuesPath,
    refreshMs: options.refreshMs,
    // Redrawing more often than the history gains a sample would only repeat the same picture.
    historyRefreshMs: Math.max(1000, options.historyIntervalMs),
    historyIntervalMs: options.historyIntervalMs,
    readOnly: options.readOnly,
  };
  // `<` escaped: no value can end the element early (JSON.parse reads \u003c back as `<`).
  const json = JSON.stringify(config).replaceAll('<', '\\u003c');
  return shell.replace(CONFIG_ELEMENT, () => CONFIG_ELEMENT.replace('><', `>${json}<`));
}

let assets: Promise<StaticAsset[]> | undefined;

/**
 * The page's script, src/client/overview.ts bundled by esbuild into one browser module (types
 * erased, the client's modules inlined), and its stylesheet. Built once per process, on the first
 * start of a dashboard, in memory: nothing is written (the Docker image's /app is read-only) and no
 * build step is left to the user. A failed build rejects, and the next call tries again.
 */
export function overviewAssets(): Promise<StaticAsset[]> {
  assets ??= buildAssets().catch((err: unknown) => {
    assets = undefined;
    throw err;
  });
  return assets;
}

async function buildAssets(): Promise<StaticAsset[]> {
  // Loaded here, not with this module: `tickfleet status` and the other commands that import the
  // dashboard's barrel never serve the page.
  const { build } = await import('esbuild');
  const result = await build({
    entryPoints: [fileURLToPath(new URL('overview.ts', CLIENT))],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    target: 'es2020',
    charset: 'utf8',
    legalComments: 'none',
    logLevel: 'silent',
  });
  const [script] = result.outputFiles;
  if (!script) throw new NotFoundError('esbuild output of the overview script', 'src/client/overview.ts');
  // Revalidated on every load (express answers 304 by ETag): after an upgrade the page never runs an older script.
  const cacheControl = 'no-cache';
  return [
    { path: '/assets/overview.js', contentType: 'text/javascript; charset=utf-8', cacheControl, body: Buffer.from(script.contents) },
    { path: '/assets/overview.css', contentType: 'text/css; charset=utf-8', cacheControl, body: readFileSync(new URL('overview.css', CLIENT)) },
  ];
}
