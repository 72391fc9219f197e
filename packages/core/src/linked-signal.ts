/** A signal that follows several others (and optionally a timeout), and the way to let go of them. */
export interface LinkedSignal {
  readonly signal: AbortSignal;
  /** Aborts the signal with `reason` (another cause than its inputs: a lost lock) and lets go of the inputs. */
  abort(reason: unknown): void;
  /** Removes the listeners from the inputs and clears the timer; idempotent. Call it when the work is done. */
  dispose(): void;
}

/**
 * One signal that aborts when any of `signals` does (with that signal's reason) or, with
 * `timeoutMs`, when that much time has passed (reason: a `TimeoutError` DOMException, as
 * `AbortSignal.timeout` gives). A cheap stand-in for `AbortSignal.any` + `AbortSignal.timeout` on
 * the hot path: those cost about 17 µs per call on Node 20 and leave weak references for the GC;
 * this costs about 1 µs. The price is `dispose()`: without it the listeners stay on inputs that
 * may live much longer than the work (a process's shutdown signal).
 */
export function linkedSignal(signals: ReadonlyArray<AbortSignal | undefined>, timeoutMs?: number): LinkedSignal {
  const controller = new AbortController();
  const listeners: Array<[AbortSignal, () => void]> = [];
  let timer: NodeJS.Timeout | undefined;
  const dispose = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    for (const [input, listener] of listeners) input.removeEventListener('abort', listener);
    listeners.length = 0;
  };
  const abort = (reason: unknown): void => {
    dispose();
    controller.abort(reason);
  };
  for (const input of signals) {
    if (input === undefined) continue;
    if (input.aborted) {
      abort(input.reason);
      return { signal: controller.signal, abort, dispose };
    }
    const listener = (): void => {
      dispose();
      controller.abort(input.reason);
    };
    input.addEventListener('abort', listener, { once: true });
    listeners.push([input, listener]);
  }
  if (timeoutMs !== undefined) {
    timer = setTimeout(() => {
      dispose();
      controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
    }, timeoutMs);
    timer.unref();
  }
  return { signal: controller.signal, abort, dispose };
}
