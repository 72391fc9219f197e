import { CommanderError } from 'commander';
import { errorExitCode, oneLineError } from './edge-errors.js';
import { commandGroupOf } from './commands/index.js';
import { buildProgram } from './program.js';

try {
  await (await buildProgram(commandGroupOf(process.argv.slice(2)))).parseAsync(process.argv);
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
