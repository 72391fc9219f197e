/**
 * A test fixture could not do its job: a redis-server, CLI process or emulation did not start,
 * answer or stop as required, or a fixture was used in a way it does not support. The message
 * names the fixture and what went wrong, so a failing test says which part of the set-up broke
 * rather than what the code under test did.
 */
export class FixtureError extends Error {
  constructor(
    /** The fixture that failed, e.g. `redis-server on 6390`, `FleetHarness`, `tickfleet worker`. */
    readonly fixture: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'FixtureError';
  }
}

/** A wait for a state (see `waitFor`) or for a child process ran out of time. */
export class WaitTimeoutError extends FixtureError {
  constructor(
    /** What was awaited, as the caller described it. */
    readonly what: string,
    readonly timeoutMs: number,
    message: string,
  ) {
    super(what, message);
    this.name = 'WaitTimeoutError';
  }
}
