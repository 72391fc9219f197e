import type { Command } from 'commander';
import { LISTEN_DEFAULTS, ValidationError } from '@tickfleet/core';
import { DEFAULT_SEED, MOCK_VENUES, parseScenario, startMockVenue, type MockVenueName, type Scenario } from '@tickfleet/mock-venue';
import { createLogger, onShutdown } from '@tickfleet/telemetry';
import { cliEnv } from '../cli-env.js';
import { readLinesBounded } from '../internal/read-lines-bounded.js';

interface MockVenueCliOptions {
  port: string;
  host: string;
  scenario?: string;
}

/**
 * `tickfleet mock-venue --port <p> [--host 127.0.0.1] [--scenario file.json]`: serves every venue
 * emulation on one port until SIGTERM/SIGINT. Stdout carries exactly one JSON line once listening,
 * `{"url":…,"venues":{"binance":"http://…/binance",…}}`, so scripts can read the base URLs; logs go to stderr.
 */
export function registerMockVenue(program: Command): void {
  program
    .command('mock-venue')
    .description('serve the venue emulations (alpaca, binance, finnhub, fred, limitless, polygon, polymarket, xetra) on one HTTP port')
    .requiredOption('--port <port>', 'TCP port to listen on (0 picks a free one)')
    .option('--host <host>', 'interface to bind', LISTEN_DEFAULTS.host)
    .option('--scenario <file>', 'scenario JSON file (limits, latency, faults; see docs/mock-venue.md)')
    .action(async (opts: MockVenueCliOptions) => {
      const port = parsePort(opts.port);
      const scenario: Scenario = opts.scenario ? loadScenarioFile(opts.scenario) : {};
      const logger = createLogger({ role: 'mock-venue', level: cliEnv('LOG_LEVEL').LOG_LEVEL, destination: process.stderr });
      const mv = await startMockVenue({ port, host: opts.host, scenario }).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'EADDRINUSE' || err.code === 'EACCES') throw new ValidationError('--port', `a port free to bind on ${opts.host} (${err.code})`, port);
        if (err.code === 'EADDRNOTAVAIL' || err.code === 'ENOTFOUND') throw new ValidationError('--host', `a local interface address (${err.code})`, opts.host);
        throw err;
      });
      const venues = Object.fromEntries(MOCK_VENUES.map((v: MockVenueName) => [v, mv.baseUrl(v)]));
      process.stdout.write(`${JSON.stringify({ url: mv.url, venues })}\n`);
      logger.info({ url: mv.url, scenario: opts.scenario ?? null, seed: mv.scenario().seed ?? DEFAULT_SEED }, 'mock venues listening');
      onShutdown(logger, async () => {
        const stats = mv.stats();
        await mv.stop();
        logger.info({ requests: Object.fromEntries(MOCK_VENUES.map((v) => [v, stats.venues[v].requests])) }, 'mock venues stopped');
      });
      // serve until a signal: onShutdown exits the process
      await new Promise<never>(() => undefined);
    });
}

function parsePort(text: string): number {
  if (!/^\d{1,5}$/.test(text) || Number(text) > 65_535) throw new ValidationError('--port', 'a TCP port number 0..65535', text);
  return Number(text);
}

/** A scenario is a small JSON object (the admin API takes at most 1 MiB a PATCH): a larger file, or a device, is refused. */
const MAX_SCENARIO_FILE_BYTES = 1 << 20;

/** Reads and validates `--scenario`, read with a bound; errors name `--scenario` and the bad field. */
function loadScenarioFile(path: string): Scenario {
  const lines: string[] = [];
  readLinesBounded(path, { argName: '--scenario', what: 'a scenario JSON file', maxBytes: MAX_SCENARIO_FILE_BYTES }, (line) => lines.push(line));
  let json: unknown;
  try {
    json = JSON.parse(lines.join('\n'));
  } catch {
    throw new ValidationError('--scenario', 'a file holding valid JSON', path);
  }
  return parseScenario(json, `--scenario ${path}: scenario`);
}
