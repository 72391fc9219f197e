import { FINNHUB_EXPIRATIONS, FINNHUB_STRIKES } from '@tickfleet/mock-venue';
import { waitFor } from '@tickfleet/testkit';
import { FleetHarness, type FleetProcess } from '@tickfleet/testkit/fleet';

const JOB = 'finnhub:@megacaps:-:options';
/** Contracts in one emulated chain: calls and puts of every strike of every expiration. */
const CONTRACTS = FINNHUB_EXPIRATIONS * FINNHUB_STRIKES * 2;
const FIRST = Array.from({ length: 45 }, (_, i) => `U${String(i).padStart(2, '0')}`);
const PER_CYCLE = 30;
const SECOND = ['NEWA', 'NEWB', 'NEWC'];

/** (slot, underlier) of every option-chain unit a worker finished, from its debug `unit done` lines, in finishing order. */
function collected(worker: FleetProcess): Array<{ slot: number; symbol: string }> {
  const out: Array<{ slot: number; symbol: string }> = [];
  for (const line of worker.output().split('\n')) {
    if (!line.includes('"msg":"unit done"') || !line.includes('|options|')) continue;
    const entry = JSON.parse(line) as { unitId: string; detail: string };
    out.push({ slot: Number(entry.unitId.split('|').pop()), symbol: entry.detail.split(':')[0]! });
  }
  return out;
}

/**
 * An `options` job over a universe of 45, with a real scheduler and worker, Redis and SQLite:
 * each one-second cycle refreshes the next 30 underliers round-robin from the job's cursor
 * (wrapping around the universe), so every member is collected in turn; the position survives a
 * scheduler restart; editing the universe changes what the next cycles collect. Chains
 * re-fetched within the emulation's quote minute are the same snapshot and store nothing twice.
 * Finnhub's minute limit is raised here and 30 units arrive at once every cycle, so only the
 * adapter's spacing keeps the fleet (two in flight, fast local answers) under the 30/s cap:
 * without it this test sees the emulation refuse requests (burstRejected > 0).
 */
describe('fleet: Finnhub option chains over a universe', () => {
  let fleet: FleetHarness;
  beforeAll(async () => {
    fleet = await FleetHarness.start({ venues: { finnhub: { limit: { requests: 6000 } } } });
  });
  afterAll(() => fleet.stop());

  it('collects every underlier in turn, continues after a scheduler restart, follows universe edits, stores each snapshot once', async () => {
    await fleet.upsertConnector('finnhub', '--limit', '6000', '--period', '60s', '--max-inflight', '2');
    await fleet.ok('universes', 'set', 'finnhub', 'megacaps', ...FIRST);
    expect((await fleet.ok('jobs', 'add', 'finnhub', 'options', '@megacaps', '--per-cycle', String(PER_CYCLE))).trim()).toBe(JOB);

    const schedulerEnv = { TICKFLEET_SCHEDULER_TICK_MS: '200', TICKFLEET_SCHEDULER_OPTIONS_EVERY_MS: '1000' };
    let scheduler = fleet.spawn('scheduler', ['scheduler'], schedulerEnv);
    const worker = fleet.spawn('worker', ['worker'], { FINNHUB_API_KEY: 'test-finnhub-key', LOG_LEVEL: 'debug' });
    await fleet.ready(worker);
    const cursor = (): Promise<number> => fleet.withStore(async (s) => (await s.jobs.get(JOB))?.cursor ?? 0);

    await waitFor(async () => (await cursor()) >= FIRST.length, 'a first round over the universe', { timeoutMs: 120_000, intervalMs: 200 });
    // A new scheduler plans from the stored cursor, not from slot 0.
    await fleet.stopCleanly(scheduler);
    const beforeRestart = await cursor();
    const doneBeforeRestart = collected(worker).length;
    scheduler = fleet.spawn('scheduler-2', ['scheduler'], schedulerEnv);
    await waitFor(async () => (await cursor()) >= 2 * FIRST.length, 'a second round after the restart', { timeoutMs: 120_000, intervalMs: 200 });
    // A unit moves the cursor before its worker logs it done: wait for the lines of the slots the cursor passed.
    await waitFor(
      () => {
        const seen = new Set(collected(worker).map((u) => u.slot));
        return Array.from({ length: 2 * FIRST.length }, (_, slot) => slot).every((slot) => seen.has(slot));
      },
      'the log lines of both rounds',
      { timeoutMs: 30_000, intervalMs: 100 },
    ).catch(() => undefined);
    const round = collected(worker);
    const slots = round.map((u) => u.slot);
    // Every slot of the two rounds ran, each on member slot % size: every underlier in turn, twice.
    for (let slot = 0; slot < 2 * FIRST.length; slot++) expect(slots).toContain(slot);
    for (const u of round.filter((x) => x.slot < 2 * FIRST.length)) expect(u.symbol).toBe(FIRST[u.slot % FIRST.length]);
    // Units finished after the restart are the cycle in flight at the restart (at most one cycle back) or later ones.
    expect(round.slice(doneBeforeRestart).filter((u) => u.slot < beforeRestart - PER_CYCLE)).toEqual([]);

    // Editing the universe changes what the next units collect.
    await fleet.ok('universes', 'set', 'finnhub', 'megacaps', ...SECOND);
    await waitFor(
      () =>
        fleet.withSink(async (sink) =>
          (await Promise.all(SECOND.map((s) => sink.reader!.countEnvelopes({ venue: 'finnhub', channel: 'options', symbol: s })))).every((n) => n > 0),
        ),
      'chains of the edited universe',
      { timeoutMs: 120_000, intervalMs: 250 },
    );
    await fleet.stopCleanly(scheduler);
    await fleet.stopCleanly(worker);

    // Each stored snapshot (underlier, quote time) is one whole chain, every contract once, although
    // most chains were fetched more than once within their quote minute.
    const snapshots = await fleet.withSink(async (sink) => {
      const bySnapshot = new Map<string, Set<string>>();
      let rows = 0;
      for await (const { envelope } of sink.reader!.streamEnvelopes({ venue: 'finnhub', channel: 'options' })) {
        rows += 1;
        const id = `${envelope.symbol}@${envelope.serverTimeMs}`;
        const set = bySnapshot.get(id) ?? new Set<string>();
        set.add(String(envelope.payload.contract));
        bySnapshot.set(id, set);
      }
      return { rows, bySnapshot };
    });
    for (const contracts of snapshots.bySnapshot.values()) expect(contracts.size).toBe(CONTRACTS);
    // What `data count --channel options` reports is what the sink holds.
    const counted = JSON.parse(await fleet.ok('data', 'count', 'finnhub', 'U00', '--channel', 'options', '--sink', fleet.sinkUrl, '--json')) as {
      count: number;
    };
    const u00 = [...snapshots.bySnapshot.keys()].filter((k) => k.startsWith('U00@')).length;
    expect(counted).toMatchObject({ venue: 'finnhub', symbol: 'U00', channel: 'options', count: u00 * CONTRACTS });
    expect(snapshots.rows).toBe(snapshots.bySnapshot.size * CONTRACTS);
    const stats = await fleet.mockStats('finnhub');
    process.stdout.write(
      `finnhub: ${JSON.stringify({ requests: stats.requests, ok: stats.responses2xx, snapshots: snapshots.bySnapshot.size, rows: snapshots.rows, ...stats.extra })}\n`,
    );
    expect(stats.responses2xx).toBeGreaterThan(snapshots.bySnapshot.size);
    // The per-second cap held with only the spacing to keep it: ground truth of the emulation.
    expect(stats.extra).toMatchObject({ burstRejected: 0 });
    expect(stats.extra!.maxPerSecond).toBeLessThanOrEqual(30);
    expect(stats.responses429).toBe(0);
  }, 300_000);
});
