import pino, { type Logger, type LoggerOptions } from 'pino';
import { DEFAULT_LOG_LEVEL, LOG_LEVELS, ValidationError } from '@tickfleet/core';

export type { Logger } from 'pino';

export interface LoggerFactoryOptions {
  /** Role of the process (`worker`, `scheduler`, …); set as `role` on every line. */
  role: string;
  /** The caller's configured level (a role's LOG_LEVEL). @defaultValue {@link DEFAULT_LOG_LEVEL} */
  level?: (typeof LOG_LEVELS)[number];
  /** Where to write; defaults to stdout. Tests pass a stream to capture lines. */
  destination?: NodeJS.WritableStream;
  base?: Record<string, unknown>;
}

/** JSON logs with pino: ISO time, `role` and `pid` on every line, errors serialised with their code. */
export function createLogger(options: LoggerFactoryOptions): Logger {
  const level = options.level ?? DEFAULT_LOG_LEVEL;
  // pino throws a bare Error with a stack for an unknown level (an untyped caller); name the option instead.
  if (!(LOG_LEVELS as readonly string[]).includes(level)) throw new ValidationError('level', `one of ${LOG_LEVELS.join(', ')}`, level);
  const pinoOptions: LoggerOptions = {
    level,
    base: { role: options.role, pid: process.pid, ...options.base },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    serializers: { err: pino.stdSerializers.errWithCause },
  };
  return options.destination ? pino(pinoOptions, options.destination) : pino(pinoOptions);
}

/**
 * Logs a repeating error at most once per `intervalMs` per key: the first occurrence at once, then
 * one line per interval carrying how many were suppressed in between (a worker whose Redis is gone
 * would otherwise write a line every few milliseconds).
 */
export function rateLimitedLog(
  logger: Logger,
  intervalMs: number,
): (level: 'error' | 'warn', key: string, fields: Record<string, unknown>, msg: string) => void {
  const last = new Map<string, { at: number; suppressed: number }>();
  return (level, key, fields, msg) => {
    const now = Date.now();
    const seen = last.get(key);
    if (seen && now - seen.at < intervalMs) {
      seen.suppressed += 1;
      return;
    }
    last.set(key, { at: now, suppressed: 0 });
    logger[level]({ ...fields, ...(seen && seen.suppressed > 0 ? { suppressed: seen.suppressed } : {}) }, msg);
  };
}
