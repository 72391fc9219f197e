import type { Command } from 'commander';

/**
 * Every command group registers itself here, one file per group under `commands/`, in the order
 * `tickfleet --help` lists them: roles first, then operator commands.
 *
 * A command with subcommands declares no options and no action of its own: commander lets a
 * command claim its options anywhere on the line, its subcommands' part included, so a group's
 * `--json` would take its subcommand's. What the group itself does is its default subcommand
 * (`backfill start`, `gaps list`). Only the root has options (`--store`), global on purpose, and
 * no command reuses their names. apps/cli/test/json-output.int.test.ts checks both.
 */
export async function registerCommands(program: Command, only?: CommandGroup): Promise<void> {
  for (const name of only ? [only] : COMMAND_GROUPS) (await GROUPS[name]())(program);
}

type Register = (program: Command) => void;

/**
 * Each group's module is loaded only when it is registered: `tickfleet connectors list` does not
 * load the venue adapters, the sinks or the emulations (about a third of its start-up time).
 */
const GROUPS = {
  up: async () => (await import('./up.js')).registerUp,
  scheduler: async () => (await import('./scheduler.js')).registerScheduler,
  worker: async () => (await import('./worker.js')).registerWorker,
  dashboard: async () => (await import('./dashboard.js')).registerDashboard,
  'mock-venue': async () => (await import('./mock-venue.js')).registerMockVenue,
  venues: async () => (await import('./venues.js')).registerVenues,
  connectors: async () => (await import('./connectors.js')).registerConnectors,
  jobs: async () => (await import('./jobs.js')).registerJobs,
  universes: async () => (await import('./universes.js')).registerUniverses,
  streams: async () => (await import('./streams.js')).registerStreams,
  backfill: async () => (await import('./backfill.js')).registerBackfill,
  status: async () => (await import('./status.js')).registerStatus,
  queues: async () => (await import('./queues.js')).registerQueues,
  units: async () => (await import('./units.js')).registerUnits,
  gaps: async () => (await import('./gaps.js')).registerGaps,
  data: async () => (await import('./data.js')).registerData,
  spool: async () => (await import('./spool.js')).registerSpool,
} satisfies Record<string, () => Promise<Register>>;

export type CommandGroup = keyof typeof GROUPS;

/** The groups in the order `tickfleet --help` lists them. */
const COMMAND_GROUPS = Object.keys(GROUPS) as CommandGroup[];

/**
 * The command group an argument list runs (`['--store', url, 'connectors', 'list']` runs
 * `connectors`), or undefined when it runs none of them or asks for help before naming one: then
 * every group is registered, so help lists them all and a mistyped name gets commander's message.
 */
export function commandGroupOf(args: readonly string[]): CommandGroup | undefined {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--store') i += 1;
    else if (arg.startsWith('--store=')) continue;
    else if (arg.startsWith('-')) return undefined;
    else return Object.hasOwn(GROUPS, arg) ? (arg as CommandGroup) : undefined;
  }
  return undefined;
}
