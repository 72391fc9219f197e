import { existsSync } from 'node:fs';
import { FixtureError } from './testkit-error.js';

/** Debian's chromium, which the browser tests drive through playwright-core (scripts/setup.sh installs it). */
export const CHROMIUM = '/usr/bin/chromium';

/** Flags for a headless Chromium in CI: no sandbox (root in a container), no GPU, no network chatter of its own. */
export const CHROMIUM_ARGS: readonly string[] = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Fails, saying how to get it, when Debian's chromium is missing (browser tests never skip). */
export function requireChromium(): string {
  if (!existsSync(CHROMIUM)) {
    throw new FixtureError(
      'chromium',
      `${CHROMIUM} not found: the browser tests need Debian's chromium (scripts/setup.sh installs it: apt-get install -y chromium)`,
    );
  }
  return CHROMIUM;
}
