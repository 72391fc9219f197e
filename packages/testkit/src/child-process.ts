import type { ChildProcess } from 'node:child_process';

/** Whether a child process is still running: neither exited with a code nor killed by a signal (its `exitCode` stays null then). */
export function isRunning(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}
