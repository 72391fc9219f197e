/**
 * Defaults of the scheduler, in one place: its options, its environment schema and the
 * benchmark take them from here, so a default changes once.
 *
 * Batching of a tick (`TICKFLEET_SCHEDULER_BATCH` overrides `batchSize`): up to 100 000 jobs per
 * tick. Every claim scans all due rows, including those leased by earlier batches, so fewer,
 * larger claims cost the store much less (100 000 jobs: ~1.25 s of CPU in batches of 2000,
 * ~0.65 s in batches of 5000); each one still holds SQLite's write lock only for tens of ms. The
 * claimed jobs go to Redis in smaller chunks, a few under way at once: the objects BullMQ and
 * ioredis make for a chunk then die young, which saves about a tenth of the tick's CPU in garbage
 * collection against enqueuing whole batches. Eight chunks under way keep Redis busy while this
 * process prepares more: 100 000 jobs took ~3.8 s with 2, ~3.0 s with 8 to 20 (interleaved runs).
 */
export const SCHEDULER_DEFAULTS = {
  /** Time between ticks (followers try to lead once per tick). */
  tickMs: 1000,
  batchSize: 5000,
  maxBatchesPerTick: 20,
  enqueueChunk: 500,
  enqueueDepth: 8,
  /** Lease set on claimed jobs until their unit ends. */
  leaseMs: 300_000,
  /** Leader lock lifetime: a dead leader is replaced at most this long (plus one follower tick) after its last renewal. */
  leaderTtlMs: 5000,
  /** How often the leader compares Redis with the store. */
  repairEveryMs: 30_000,
  /** Owed chunks read per store call during a repair. */
  repairBatch: 1000,
  /** A repair leaves the chunks of a backfill created less than this long ago to its creator. */
  repairGraceMs: 15_000,
  /**
   * A book job of a venue polled by its book loop (connector `bookLoop`) gets no unit: its lease is
   * freed with this long until it is due again, so turning the loop off brings its units back within it.
   */
  bookLoopRecheckMs: 60_000,
  /** How long the list of venues polled by a book loop is reused before the connectors are read again. */
  bookLoopVenuesTtlMs: 5000,
} as const;
