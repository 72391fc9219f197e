import { createRedisConnection } from '@tickfleet/queues';
import type { Logger } from '@tickfleet/telemetry';
import { startRedis, waitFor } from '@tickfleet/testkit';
import { LeaderElection } from './leader-election.js';

describe('LeaderElection', () => {
  it('keeps the lead by renewing past its TTL, and hands over when the leader resigns', async () => {
    const redis = await startRedis();
    const a = createRedisConnection(redis.url);
    const b = createRedisConnection(redis.url);
    const key = `${redis.namespace()}:scheduler:leader`;
    const changes: boolean[] = [];
    // Renewed every 50 ms, the lock survives a pause of this process of up to ~0.9 s (a loaded
    // machine); the wait is past the TTL, so only the renewals can have kept it.
    const ea = new LeaderElection(a, { key, id: 'a', ttlMs: 1000, renewEveryMs: 50, onChange: (l) => changes.push(l) });
    const eb = new LeaderElection(b, { key, id: 'b', ttlMs: 1000 });
    try {
      expect(await ea.tryLead()).toBe(true);
      expect(await eb.tryLead()).toBe(false);
      await new Promise((r) => setTimeout(r, 1500));
      expect(ea.isLeader).toBe(true);
      expect(await eb.tryLead()).toBe(false);
      expect(await eb.currentLeader()).toMatch(/^a:/);
      await ea.resign();
      expect(await eb.tryLead()).toBe(true);
      expect(changes).toEqual([true, false]);
    } finally {
      await ea.resign();
      await eb.resign();
      await Promise.all([a.quit(), b.quit()]);
      await redis.stop();
    }
  });

  it('steps down when its lock cannot be renewed within the TTL (Redis not answering)', async () => {
    const redis = await startRedis();
    const conn = createRedisConnection(redis.url, { blocking: false });
    const admin = createRedisConnection(redis.url, { blocking: false });
    const warnings: string[] = [];
    const logger = { info: () => undefined, warn: (_: unknown, msg: string) => void warnings.push(msg) } as unknown as Logger;
    const election = new LeaderElection(conn, { key: `${redis.namespace()}:leader`, id: 'a', ttlMs: 300, logger });
    try {
      expect(await election.tryLead()).toBe(true);
      // The server stops answering every client for 2 s: renewals hang, the lock would lapse.
      await admin.call('CLIENT', 'PAUSE', '2000', 'ALL');
      // Stepping down is final (nothing leads again without tryLead), so the wait may be long;
      // the warning shows it stepped down for want of an answer, not on a refusal after the pause.
      await waitFor(() => !election.isLeader, 'the leader to step down', { timeoutMs: 30_000, intervalMs: 20 });
      expect(warnings).toEqual(['leader lock not renewed within its TTL; stepping down']);
    } finally {
      await election.resign();
      await Promise.all([conn.quit(), admin.quit()]);
      await redis.stop();
    }
  });
});
