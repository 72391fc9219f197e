import { createRedisConnection } from '@tickfleet/queues';
import { startRedis, waitFor } from '@tickfleet/testkit';
import { LeaderElection } from './leader-election.js';

describe('LeaderElection', () => {
  it('keeps the lead by renewing past its TTL, and hands over when the leader resigns', async () => {
    const redis = await startRedis();
    const a = createRedisConnection(redis.url);
    const b = createRedisConnection(redis.url);
    const key = `${redis.namespace()}:scheduler:leader`;
    const changes: boolean[] = [];
    const ea = new LeaderElection(a, { key, id: 'a', ttlMs: 300, onChange: (l) => changes.push(l) });
    const eb = new LeaderElection(b, { key, id: 'b', ttlMs: 300 });
    try {
      expect(await ea.tryLead()).toBe(true);
      expect(await eb.tryLead()).toBe(false);
      await new Promise((r) => setTimeout(r, 800));
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
    const election = new LeaderElection(conn, { key: `${redis.namespace()}:leader`, id: 'a', ttlMs: 300 });
    try {
      expect(await election.tryLead()).toBe(true);
      // The server stops answering every client for 1 s: renewals hang, the lock would lapse.
      await admin.call('CLIENT', 'PAUSE', '1000', 'ALL');
      await waitFor(() => !election.isLeader, 'the leader to step down', { timeoutMs: 900, intervalMs: 20 });
    } finally {
      await election.resign();
      await Promise.all([conn.quit(), admin.quit()]);
      await redis.stop();
    }
  });
});
