import { type Command, Option } from 'commander';

/**
 * `--json`, declared the same way by every command that prints a result (`.addOption(jsonOption())`):
 * one flag name and one meaning, stdout is then exactly one JSON document.
 * apps/cli/test/json-output.int.test.ts finds every command declaring it and parses its output.
 */
export function jsonOption(description = 'print JSON'): Option {
  return new Option('--json', description);
}

/** Prints a value as one JSON document on stdout. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Prints rows as an aligned plain-text table on stdout. */
export function printTable(columns: string[], rows: Array<Array<string | number | null | undefined>>): void {
  const cells = rows.map((r) => r.map((c) => (c === null || c === undefined ? '-' : String(c))));
  const widths = columns.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i]?.length ?? 0)));
  const line = (r: string[]): string =>
    r
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  process.stdout.write(`${[line(columns), ...cells.map(line)].join('\n')}\n`);
}

export function isoOrDash(ms: number | null | undefined): string {
  return ms === null || ms === undefined ? '-' : new Date(ms).toISOString();
}

/**
 * A command group's help ends with examples and the whole help of its default subcommand, whose
 * options the group's own help would not show (`tickfleet backfill --help` shows how to start one).
 */
export function withDefaultCommandHelp(group: Command, defaultCommand: Command, examples: readonly string[]): void {
  const name = `${group.name()} ${defaultCommand.name()}`;
  group.addHelpText('after', () =>
    [
      '',
      'Examples:',
      ...examples.map((e) => `  ${e}`),
      '',
      `The default command, ${defaultCommand.name()} (tickfleet ${group.name()} <args> is tickfleet ${name} <args>):`,
      '',
      defaultCommand.helpInformation(),
    ].join('\n'),
  );
}
