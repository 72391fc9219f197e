import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot, tempDir, type TempDir } from '@tickfleet/testkit';
import { FleetLock, type LockHolder } from './fleet-lock.js';

const TAKER = join(repoRoot(), 'apps', 'cli', 'test', 'fixtures', 'fleet-lock-taker.ts');

let dir: TempDir;
beforeEach(() => {
  dir = tempDir('fleet-lock-');
});
afterEach(() => dir.remove());

/** The pid of a process that has exited. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', '']);
  return r.pid!;
}

function staleLock(path: string, pid: number, nonce: string): void {
  writeFileSync(path, JSON.stringify({ pid, nonce, start: null }));
}

interface Taker {
  proc: ChildProcess;
  answer: Promise<string>;
}

/** A process taking the lock at `path` once the wall clock reaches `atMs`, so several contend at once. */
function taker(path: string, atMs: number): Taker {
  const proc = spawn(process.execPath, ['--import', 'tsx', TAKER, path, String(atMs)], {
    cwd: repoRoot(),
    env: { ...process.env, NODE_OPTIONS: '' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const answer = new Promise<string>((resolve, reject) => {
    proc.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve(out.trim());
    });
    proc.once('exit', (code) => (out.includes('\n') ? undefined : reject(new Error(`taker exited ${code}: ${err}`))));
  });
  return { proc, answer };
}

async function contend(path: string, n: number): Promise<{ winner: Taker; answers: string[] }> {
  const at = Date.now() + 3000;
  const takers = Array.from({ length: n }, () => taker(path, at));
  const answers = await Promise.all(takers.map((t) => t.answer));
  expect(answers.filter((a) => a === 'taken')).toHaveLength(1);
  const winner = takers[answers.indexOf('taken')]!;
  // Every other one names the winner, the live holder.
  expect(answers.filter((a) => a !== 'taken')).toEqual(Array.from({ length: n - 1 }, () => `held ${winner.proc.pid}`));
  const gone = new Promise((r) => winner.proc.once('exit', r));
  winner.proc.stdin?.end();
  await gone;
  return { winner, answers };
}

describe('FleetLock', () => {
  it('takes a free lock, names its live holder to the next taker, and frees it on release', async () => {
    const path = join(dir.path, 'up.lock');
    const lock = await FleetLock.acquire(path);
    expect(lock).toBeInstanceOf(FleetLock);
    const held = (await FleetLock.acquire(path)) as LockHolder;
    expect(held).toMatchObject({ pid: process.pid, nonce: expect.any(String) });
    (lock as FleetLock).release();
    expect(existsSync(path)).toBe(false);
    const again = await FleetLock.acquire(path);
    expect(again).toBeInstanceOf(FleetLock);
    (again as FleetLock).release();
    // Nothing is left behind: no private copy, no removal lock.
    expect(readdirSync(dir.path)).toEqual([]);
  });

  it('takes over a lock whose holder is gone, and one whose holder’s pid another process has now', async () => {
    const path = join(dir.path, 'up.lock');
    staleLock(path, deadPid(), 'gone');
    const lock = await FleetLock.acquire(path);
    expect(lock).toBeInstanceOf(FleetLock);
    (lock as FleetLock).release();
    // This process's pid with another start time (Linux): a reused pid, not the holder.
    writeFileSync(path, JSON.stringify({ pid: process.pid, nonce: 'old', start: '1' }));
    const reused = await FleetLock.acquire(path);
    expect(reused).toBeInstanceOf(FleetLock);
    (reused as FleetLock).release();
    writeFileSync(path, 'not a lock file');
    const garbage = await FleetLock.acquire(path);
    expect(garbage).toBeInstanceOf(FleetLock);
    (garbage as FleetLock).release();
  });

  it('lets one taker through when another removed the same stale lock while it was looking at it', async () => {
    const path = join(dir.path, 'up.lock');
    staleLock(path, deadPid(), 'stale');
    let resume: () => void = () => undefined;
    let paused: () => void = () => undefined;
    const isPaused = new Promise<void>((r) => (paused = r));
    // A finds the stale holder and stops there; B takes the directory meanwhile.
    const a = FleetLock.acquire(path, {
      onStale: () => {
        paused();
        return new Promise<void>((r) => (resume = r));
      },
    });
    await isPaused;
    const b = await FleetLock.acquire(path);
    expect(b).toBeInstanceOf(FleetLock);
    resume();
    // A goes on from what it saw: the stale file is gone, and B, alive, holds the name.
    expect(await a).toMatchObject({ pid: process.pid });
    expect(await a).not.toBeInstanceOf(FleetLock);
    (b as FleetLock).release();
    expect(readdirSync(dir.path)).toEqual([]);
  });

  it('lets exactly one of several processes through: on a free lock, a stale one, and a stale one whose remover died', async () => {
    const path = join(dir.path, 'up.lock');
    await contend(path, 5);
    expect(existsSync(path)).toBe(false);

    const dead = deadPid();
    staleLock(path, dead, 'stale');
    await contend(path, 5);
    expect(existsSync(path)).toBe(false);

    // The process removing a stale lock died in the middle: its own removal lock is stale too.
    staleLock(path, dead, 'stale2');
    staleLock(`${path}.${dead}-stale2.break`, deadPid(), 'remover');
    await contend(path, 5);
    expect(existsSync(path)).toBe(false);
  }, 60_000);
});
