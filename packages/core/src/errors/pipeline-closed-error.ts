import { TickfleetError } from './tickfleet-error.js';

/**
 * Records were pushed into a sink pipeline after it was closed (a unit still running while its
 * worker shuts down). Nothing was written; retryable, because the unit's next attempt, on a live
 * worker, writes them.
 */
export class PipelineClosedError extends TickfleetError {
  readonly code = 'E_PIPELINE_CLOSED' as const;
  readonly retryable = true;

  constructor() {
    super('the sink pipeline is closed (its worker is shutting down); nothing was written');
  }
}
