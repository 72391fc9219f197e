import pino, { type Logger, type LoggerOptions } from 'pino';

export type { Logger } from 'pino';

export interface LoggerFactoryOptions {
  /** Role of the process (`worker`, `scheduler`, …); set as `role` on every line. */
  role: string;
  /** @defaultValue process.env.LOG_LEVEL ?? 'info' */
  level?: string;
  /** Where to write; defaults to stdout. Tests pass a stream to capture lines. */
  destination?: NodeJS.WritableStream;
  base?: Record<string, unknown>;
}

/** JSON logs with pino: ISO time, `role` and `pid` on every line, errors serialised with their code. */
export function createLogger(options: LoggerFactoryOptions): Logger {
  const pinoOptions: LoggerOptions = {
    level: options.level ?? process.env.LOG_LEVEL ?? 'info',
    base: { role: options.role, pid: process.pid, ...options.base },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    serializers: { err: pino.stdSerializers.errWithCause },
  };
  return options.destination ? pino(pinoOptions, options.destination) : pino(pinoOptions);
}
