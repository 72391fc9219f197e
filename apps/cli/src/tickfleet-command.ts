import { Command, type Option } from 'commander';
import { ValidationError } from '@tickfleet/core';

/**
 * commander's Command, with a missing value refused like every other bad argument: a required
 * option not given, an option given without its value and a required argument left out end in
 * `tickfleet: invalid --venue: expected …` (exit 2, main.ts), not commander's own `error: …` line.
 * What is wrong with the command line's shape (an unknown command or option, too many arguments)
 * keeps commander's message and the hint to run --help.
 *
 * The three methods replace commander's (lib/command.js) of the same names, which it calls on the
 * command being parsed; apps/cli/test/bad-input.int.test.ts holds a case of each.
 */
export class TickfleetCommand extends Command {
  override createCommand(name?: string): TickfleetCommand {
    return new TickfleetCommand(name);
  }

  missingMandatoryOptionValue(option: Option): never {
    throw new ValidationError(optionName(option), `a value; this command requires it: ${option.description}`);
  }

  optionMissingArgument(option: Option): never {
    throw new ValidationError(optionName(option), `a value after it: ${option.description}`);
  }

  missingArgument(name: string): never {
    const argument = this.registeredArguments.find((a) => a.name() === name);
    const what = argument?.description ? `: ${argument.description}` : '';
    throw new ValidationError(name, `a value (usage: ${commandPath(this)} ${this.usage()})${what}`);
  }
}

function optionName(option: Option): string {
  return option.long ?? option.flags;
}

/** `tickfleet streams add`: the command's name after its parents'. */
function commandPath(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}
