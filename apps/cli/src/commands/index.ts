import type { Command } from 'commander';

/**
 * Every command group registers itself here, one file per group under `commands/`.
 * Keep this list sorted; each entry is `register<Group>(program)`.
 */
export function registerCommands(program: Command): void {
  void program;
}
