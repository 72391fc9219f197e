import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from './repo-root.js';
import { WaitTimeoutError } from './testkit-error.js';

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  env?: Record<string, string | undefined>;
  cwd?: string;
  input?: string;
  /** @defaultValue 60000 */
  timeoutMs?: number;
}

/** Path of the `tickfleet` executable script. */
export function cliPath(): string {
  return join(repoRoot(), 'apps', 'cli', 'bin', 'tickfleet.mjs');
}

/**
 * Spawns `tickfleet <args>` as a child process (no shell). It runs from the CLI's bundle and fails
 * if that cannot be built (`TICKFLEET_CLI_BUNDLE=1`, apps/cli/bin/cli-bundle.mjs), so a source the
 * bundle cannot hold fails the tests instead of silently slowing every CLI start.
 */
export function spawnCli(args: string[], options: CliOptions = {}): ChildProcess {
  return spawn(process.execPath, [cliPath(), ...args], {
    cwd: options.cwd ?? repoRoot(),
    env: { ...process.env, NODE_OPTIONS: '', LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn', TICKFLEET_CLI_BUNDLE: '1', ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

/** Runs `tickfleet <args>` to completion and collects its output. */
export function runCli(args: string[], options: CliOptions = {}): Promise<CliResult> {
  const child = spawnCli(args, options);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdin?.end(options.input ?? '');
  const timeoutMs = options.timeoutMs ?? 60_000;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new WaitTimeoutError(
          `tickfleet ${args.join(' ')}`,
          timeoutMs,
          `tickfleet ${args.join(' ')} timed out after ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`,
        ),
      );
    }, timeoutMs);
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}
