/**
 * Budget safety across processes: a wire server started through its CLI (bin.ts) in one
 * process, four worker processes spending one fixed-window budget through the official
 * driver. The sum granted in any window never exceeds the limit. Against MONGO_URL when set.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { type Document, MongoClient } from 'mongodb';
import { repoRoot, waitFor } from '@tickfleet/testkit';

const root = repoRoot();
const children: ChildProcess[] = [];

function node(args: string[]): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
    cwd: root,
    env: { ...process.env, NODE_OPTIONS: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  return child;
}

function output(child: ChildProcess): { stdout: () => string; stderr: () => string; exited: Promise<number | null> } {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { stdout: () => stdout, stderr: () => stderr, exited };
}

afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
});

it('keeps 4 worker processes within one fixed-window budget (no window over its limit)', async () => {
  let base = process.env.MONGO_URL;
  if (!base) {
    const server = output(node([join('packages', 'mongo-wire', 'src', 'bin.ts'), '--port', '0']));
    base = (await waitFor(() => server.stdout().split('\n')[0]?.trim(), `mongo-wire bin URL (stderr: ${server.stderr()})`, { timeoutMs: 30_000 })) as string;
    expect(base).toMatch(/^mongodb:\/\/127\.0\.0\.1:\d+\/$/);
  }
  const url = new URL(base);
  url.pathname = `/mp_${randomUUID().slice(0, 8)}`;
  const limit = 20;
  const periodMs = 200;
  const weight = 2;
  const client = await new MongoClient(url.toString()).connect();
  try {
    await client
      .db()
      .collection('budgets')
      .insertOne({ _id: 'venue', windowStart: 0, used: 0, limit } as Document);
    const workers = Array.from({ length: 4 }, () =>
      output(node([join('packages', 'mongo-wire', 'test', 'fixtures', 'budget-worker.ts'), url.toString(), '1500', String(periodMs), String(weight)])),
    );
    const codes = await Promise.all(workers.map((w) => w.exited));
    expect(codes).toEqual([0, 0, 0, 0]);
    const perWindow = new Map<string, number>();
    let requests = 0;
    for (const worker of workers) {
      const report = JSON.parse(worker.stdout().trim()) as { requests: number; granted: Record<string, number> };
      requests += report.requests;
      for (const [ws, spent] of Object.entries(report.granted)) perWindow.set(ws, (perWindow.get(ws) ?? 0) + spent);
    }
    // Demand far exceeds supply, so the limit is reached and must hold in every window.
    expect(requests).toBeGreaterThan(perWindow.size * (limit / weight));
    expect(perWindow.size).toBeGreaterThanOrEqual(3);
    for (const [ws, spent] of perWindow) {
      expect(Number(ws) % periodMs).toBe(0);
      expect(spent).toBeLessThanOrEqual(limit);
    }
    expect(Math.max(...perWindow.values())).toBe(limit);
    await client.db().dropDatabase();
  } finally {
    await client.close();
  }
});
