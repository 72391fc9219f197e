import { Command, CommanderError } from 'commander';
import { isTickfleetError } from '@tickfleet/core';
import { registerCommands } from './commands/index.js';

const program = new Command('tickfleet')
  .description('tickfleet: a market-data collection fleet with fleet-wide rate budgets')
  .option('--store <url>', 'state store URL (sqlite://path or mongodb://…)', process.env.TICKFLEET_STORE_URL ?? 'sqlite://.tickfleet/state.db')
  .showHelpAfterError()
  .exitOverride();

registerCommands(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    // commander already printed its one-line message (e.g. "error: unknown option '--x'").
    process.exitCode = err.exitCode === 0 ? 0 : 2;
  } else if (isTickfleetError(err)) {
    process.stderr.write(`tickfleet: ${err.message}\n`);
    process.exitCode = err.code === 'E_VALIDATION' || err.code === 'E_CONFIG' || err.code === 'E_NOT_FOUND' ? 2 : 1;
  } else {
    process.stderr.write(`tickfleet: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  }
}
