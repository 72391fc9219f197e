import type { ConnectorStatus } from '@tickfleet/core';

/** What a connector's status lets its venue do. */
export interface StatusEffect {
  /** The scheduler claims the venue's due jobs, so new units are enqueued (the store's `claimDue` selects `active` connectors). */
  claimsJobs: boolean;
  /**
   * Workers serve the venue's queue. A paused venue stays served so that its queued units reach
   * the budget, are refused and wait delayed (their slots free) until it is resumed; a disabled
   * venue gets no new runner, and a scheduler repair leaves its queue alone.
   */
  servesQueue: boolean;
  /** The budget grants weight: every backend's acquire refuses a venue whose status does not send. */
  sends: boolean;
}

/** The one place the three statuses get their meaning (`tickfleet connectors pause|resume|disable` sets them). */
export const STATUS_EFFECTS: Readonly<Record<ConnectorStatus, StatusEffect>> = Object.freeze({
  active: { claimsJobs: true, servesQueue: true, sends: true },
  paused: { claimsJobs: false, servesQueue: true, sends: false },
  disabled: { claimsJobs: false, servesQueue: false, sends: false },
});

/** Whether a venue of this status may send (its budget can grant weight): {@link STATUS_EFFECTS}' `sends`. */
export function statusSends(status: ConnectorStatus): status is 'active' {
  return STATUS_EFFECTS[status].sends;
}

/** The retry time every budget backend gives an acquire refused for the venue's status (or an unknown venue): its decision time plus this. */
export const PAUSED_RETRY_MS = 1000;

/**
 * How long a unit whose venue may not send for its status waits (delayed, its slot freed) before it
 * looks again: longer than {@link PAUSED_RETRY_MS}, so a paused venue's queued units do not poll the
 * store from held slots; a resume takes effect within this long.
 */
const STATUS_RECHECK_MS = 5000;

/** Why a venue may not send now, and until when (for a status: when to look again, since an operator may change it at any time). */
export interface VenueHold {
  reason: 'paused' | 'disabled' | 'unknown-venue' | 'frozen';
  untilMs: number;
}

/**
 * May the venue send now? Null when it may; else why not and until when. `status` null: the venue has
 * no connector. `frozenUntilMs`: the end of its fleet-wide freeze (`FleetVenueControl`), null or past
 * when it is not frozen. The budget itself (an exhausted window) is the acquire's answer, not this.
 */
export function venueHold(status: ConnectorStatus | null, frozenUntilMs: number | null, nowMs: number): VenueHold | null {
  if (status === null) return { reason: 'unknown-venue', untilMs: nowMs + STATUS_RECHECK_MS };
  if (!statusSends(status)) return { reason: status, untilMs: nowMs + STATUS_RECHECK_MS };
  if (frozenUntilMs !== null && frozenUntilMs > nowMs) return { reason: 'frozen', untilMs: frozenUntilMs };
  return null;
}
