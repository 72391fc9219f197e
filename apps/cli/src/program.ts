import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { cliEnv } from './cli-env.js';
import { registerCommands, type CommandGroup } from './commands/index.js';
import { TickfleetCommand } from './tickfleet-command.js';

/**
 * The `tickfleet` command tree, built without parsing anything: main.ts runs it, and
 * apps/cli/test/json-output.int.test.ts walks it to run every command that takes `--json`. With
 * `only`, the tree holds that one command group (what main.ts needs to run one command).
 */
export async function buildProgram(only?: CommandGroup): Promise<Command> {
  const program = new TickfleetCommand('tickfleet')
    .description('tickfleet: a market-data collection fleet with fleet-wide rate budgets')
    .version(productVersion(), '-V, --version', 'print the tickfleet version')
    .option('--store <url>', 'state store URL (sqlite://path or mongodb://…)', cliEnv('TICKFLEET_STORE_URL').TICKFLEET_STORE_URL)
    // One line and a hint, not the whole help, after a mistyped command or option.
    .showHelpAfterError('(run tickfleet --help, or tickfleet <command> --help, for usage)')
    .exitOverride();
  await registerCommands(program, only);
  return program;
}

/** The product's version: the root package.json's, the one version of every package in the workspace. */
function productVersion(): string {
  const root = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
  return root.version;
}
