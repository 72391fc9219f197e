import { Command, CommanderError } from 'commander';
import { cliEnv } from './cli-env.js';
import { registerCommands } from './commands/index.js';
import { errorExitCode, oneLineError } from './edge-errors.js';

const program = new Command('tickfleet')
  .description('tickfleet: a market-data collection fleet with fleet-wide rate budgets')
  .option('--store <url>', 'state store URL (sqlite://path or mongodb://…)', cliEnv('TICKFLEET_STORE_URL').TICKFLEET_STORE_URL)
  // One line and a hint, not the whole help, after a mistyped command or option.
  .showHelpAfterError('(run tickfleet --help, or tickfleet <command> --help, for usage)')
  .exitOverride();

registerCommands(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    // commander already printed its one-line message (e.g. "error: unknown option '--x'").
    process.exit(err.exitCode === 0 ? 0 : 2);
  }
  process.stderr.write(`tickfleet: ${oneLineError(err)}\n`);
  // Exit at once: a failed command may still hold a Redis or store connection that would keep
  // the process alive (a role that failed to start must not linger doing nothing).
  process.exit(errorExitCode(err));
}
