import { Connector, Job, JobStats, type ConnectorInput, type JobInput, jobId, parseOrThrow } from '@tickfleet/core';

/** A validated connector plus which optional fields the caller actually gave (absent ones keep stored values on update). */
export interface NormalizedConnector {
  connector: Connector;
  given: {
    status: boolean;
    policy: boolean;
    headroom: boolean;
    maxInflight: boolean;
    freezeMs: boolean;
    freezeMaxMs: boolean;
    freezeResetMs: boolean;
    pacing: boolean;
    aimd: boolean;
    bookCooldown: boolean;
    bookLoop: boolean;
  };
}

export function normalizeConnector(input: ConnectorInput): NormalizedConnector {
  const connector = parseOrThrow(Connector, input, 'connector');
  const raw = input as Partial<Record<string, unknown>> & { rateLimit?: Partial<Record<string, unknown>> };
  return {
    connector,
    given: {
      status: raw.status !== undefined,
      policy: raw.rateLimit?.policy !== undefined,
      headroom: raw.rateLimit?.headroom !== undefined,
      maxInflight: raw.maxInflight !== undefined,
      freezeMs: raw.freezeMs !== undefined,
      freezeMaxMs: raw.freezeMaxMs !== undefined,
      freezeResetMs: raw.freezeResetMs !== undefined,
      pacing: raw.pacing !== undefined,
      aimd: raw.aimd !== undefined,
      bookCooldown: raw.bookCooldown !== undefined,
      bookLoop: raw.bookLoop !== undefined,
    },
  };
}

/** A validated job (id derived from its key) plus which optional fields the caller gave. */
export interface NormalizedJob {
  job: Job;
  given: { enabled: boolean; priority: boolean; nextRunAt: boolean; since: boolean; perCycle: boolean };
}

export function normalizeJob(input: JobInput): NormalizedJob {
  // The id is derived, so validate the key fields first and only then build it.
  const parsed = parseOrThrow(Job, { ...input, id: '-' }, 'job');
  const id = jobId({ venue: parsed.venue, symbol: parsed.symbol, type: parsed.type, timeframe: parsed.timeframe ?? undefined });
  const raw = input as Partial<Record<string, unknown>>;
  return {
    job: { ...parsed, id },
    given: {
      enabled: raw.enabled !== undefined,
      priority: raw.priority !== undefined,
      nextRunAt: raw.nextRunAt !== undefined,
      since: raw.since !== undefined,
      perCycle: raw.perCycle !== undefined,
    },
  };
}

export const EMPTY_STATS: JobStats = JobStats.parse({});
