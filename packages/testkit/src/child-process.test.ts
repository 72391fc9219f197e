import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { isRunning } from './child-process.js';

describe('isRunning', () => {
  it('is true until the process exits with a code', async () => {
    const child = spawn(process.execPath, ['-e', 'process.exit(3)'], { stdio: 'ignore' });
    expect(isRunning(child)).toBe(true);
    await once(child, 'exit');
    expect({ running: isRunning(child), code: child.exitCode }).toEqual({ running: false, code: 3 });
  });

  it('is false for a process killed by a signal, whose exitCode stays null', async () => {
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    expect(isRunning(child)).toBe(true);
    child.kill('SIGKILL');
    await once(child, 'exit');
    expect({ running: isRunning(child), code: child.exitCode, signal: child.signalCode }).toEqual({ running: false, code: null, signal: 'SIGKILL' });
  });
});
