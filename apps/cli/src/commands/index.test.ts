import { buildProgram } from '../program.js';
import { commandGroupOf, type CommandGroup } from './index.js';

describe('loading one command group', () => {
  it('registers exactly the named group, for every group of the full tree, and finds it on the command line', async () => {
    const names = (await buildProgram()).commands.map((c) => c.name());
    expect(names.length).toBeGreaterThan(10);
    for (const name of names) {
      expect(commandGroupOf(['--store', 'sqlite://x.db', name, 'list'])).toBe(name);
      expect(commandGroupOf([`--store=sqlite://x.db`, name])).toBe(name);
      // The key main.ts loads is the name the module registers: a mismatch would make the command unknown.
      expect((await buildProgram(name as CommandGroup)).commands.map((c) => c.name())).toEqual([name]);
    }
  });

  it.each([[[]], [['--help']], [['-h', 'jobs']], [['help', 'jobs']], [['jbos', 'list']], [['--store']]])(
    'registers every group for %j (help, an unknown name, no command)',
    (args) => {
      expect(commandGroupOf(args)).toBeUndefined();
    },
  );
});
