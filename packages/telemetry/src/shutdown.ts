import type { Logger } from 'pino';

/**
 * Runs `stop` once on SIGTERM or SIGINT, then exits 0 (1 if `stop` throws or exceeds `graceMs`).
 * A second signal exits at once.
 */
export function onShutdown(logger: Logger, stop: (signal: NodeJS.Signals) => Promise<void>, graceMs = 30_000): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals): void => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal, graceMs }, 'shutting down');
    const timer = setTimeout(() => {
      logger.error({ graceMs }, 'grace period exceeded: exiting');
      process.exit(1);
    }, graceMs);
    timer.unref();
    stop(signal).then(
      () => {
        logger.info('stopped cleanly');
        logger.flush?.();
        process.exit(0);
      },
      (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}
