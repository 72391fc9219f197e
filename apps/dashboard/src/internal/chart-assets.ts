import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { NotFoundError } from '@tickfleet/core';

/** A file the dashboard serves from its own origin. */
export interface StaticAsset {
  /** Route under the dashboard (relative to its root). */
  path: string;
  contentType: string;
  /** The Cache-Control header it is served with. */
  cacheControl: string;
  body: Buffer;
}

function load(specifier: string, path: string, contentType: string): StaticAsset {
  let file: string;
  try {
    // Resolved from this file (uplot is this package's dependency); `require.resolve` rather than
    // ESM resolution from `import.meta`, which in the CLI's bundle would start from the bundle's directory.
    file = createRequire(import.meta.url).resolve(specifier);
  } catch {
    throw new NotFoundError('dashboard chart library file (installed with the uplot package of @tickfleet/dashboard: run pnpm install)', specifier);
  }
  // uPlot's files change only with the package's version.
  return { path, contentType, cacheControl: 'public, max-age=3600', body: readFileSync(file) };
}

/**
 * uPlot's browser build and stylesheet, read once at start from the installed package and served
 * by the dashboard itself, so the page draws its charts with no request to another origin (it
 * works offline and behind a strict proxy). A missing file stops the start naming it.
 */
export function chartAssets(): StaticAsset[] {
  return [
    load('uplot/dist/uPlot.iife.min.js', '/assets/uplot.iife.min.js', 'text/javascript; charset=utf-8'),
    load('uplot/dist/uPlot.min.css', '/assets/uplot.min.css', 'text/css; charset=utf-8'),
  ];
}
