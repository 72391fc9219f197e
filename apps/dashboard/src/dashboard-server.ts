import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type NextFunction, type Request, type Response } from 'express';
import { FleetVenueControl, WorkerHeartbeat } from '@tickfleet/budget';
import { ValidationError } from '@tickfleet/core';
import { QUEUE_PREFIX, VenueQueues, type RedisClient } from '@tickfleet/queues';
import type { StateStore } from '@tickfleet/store';
import { createRegistry, type Logger, type Registry } from '@tickfleet/telemetry';
import { historyRange, HistoryCollector } from './fleet-history.js';
import { collectFleetStatus, type FleetStatus } from './fleet-status.js';
import { FleetStatusMetrics } from './fleet-status-metrics.js';
import { QueueBoard } from './queue-board.js';
import { StatusCache } from './status-cache.js';
import { DASHBOARD_DEFAULTS } from './dashboard-defaults.js';
import { assertCredentials, authenticate, hasCredentials, TOKEN_COOKIE, type DashboardCredentials } from './internal/dashboard-auth.js';
import { actionGuard } from './internal/action-guard.js';
import { chartAssets, type StaticAsset } from './internal/chart-assets.js';
import { overviewAssets, overviewPage } from './internal/overview-page.js';

export interface DashboardServerOptions {
  /** A non-blocking Redis client of the fleet (shared by the queues, freeze control and heartbeats). */
  redis: RedisClient;
  store: StateStore;
  /** Key prefix of the fleet's queues and venue records. @defaultValue {@link QUEUE_PREFIX} */
  prefix?: string;
  /** @defaultValue {@link DASHBOARD_DEFAULTS.serverPort} (a free port) */
  port?: number;
  /** @defaultValue {@link DASHBOARD_DEFAULTS.host} */
  host?: string;
  /**
   * Let bull-board retry, promote, clean… units. Requires credentials; without them the
   * constructor throws a ConfigError naming TICKFLEET_DASHBOARD_TOKEN. @defaultValue {@link DASHBOARD_DEFAULTS.allowActions}
   */
  allowActions?: boolean;
  /** When set, every page and API (not /metrics, /healthz, /readyz) requires them. */
  credentials?: DashboardCredentials;
  /** Spool base directory for the spool-depth figure. */
  spoolDir?: string;
  /** How often connectors are re-read for new venues. @defaultValue {@link DASHBOARD_DEFAULTS.discoverMs} */
  discoverMs?: number;
  /** How often the overview page polls `/api/status`. @defaultValue {@link DASHBOARD_DEFAULTS.refreshMs} */
  refreshMs?: number;
  /** A status snapshot is reused for this long across requests and scrapes. @defaultValue {@link DASHBOARD_DEFAULTS.statusMaxAgeMs} */
  statusMaxAgeMs?: number;
  /** How often the history behind the overview's charts samples each venue (it keeps an hour). @defaultValue {@link DASHBOARD_DEFAULTS.historyIntervalMs} */
  historyIntervalMs?: number;
  /** @defaultValue createRegistry('dashboard') */
  registry?: Registry;
  logger?: Logger;
}

const OPEN_PATHS = new Set(['/metrics', '/healthz', '/readyz']);

/**
 * The dashboard role's HTTP server: the fleet overview at `/` (its script, built from
 * src/client/ at start, polls `/api/status` and charts `/api/history` with the uPlot build served
 * beside it under `/assets/`), bull-board for every venue queue at `/queues`, and `/metrics`
 * `/healthz` `/readyz`.
 *
 * Read-only unless `allowActions`: bull-board's per-queue `readOnlyMode` answers 405 to actions,
 * and a guard in front of it refuses every non-GET board request with 403 as well (bull-board's
 * cross-queue routes such as pause-all are not covered by its per-queue flag).
 */
export class DashboardServer {
  readonly registry: Registry;
  readonly board: QueueBoard;
  readonly queues: VenueQueues;
  readonly control: FleetVenueControl;
  readonly liveness: WorkerHeartbeat;
  readonly status: StatusCache;
  readonly history: HistoryCollector;
  private readonly assets: StaticAsset[];
  private readonly allowActions: boolean;
  private readonly credentials: DashboardCredentials;
  private server: Server | undefined;
  private draining = false;

  constructor(private readonly options: DashboardServerOptions) {
    // First, so a dashboard installed without its chart library does not start at all.
    this.assets = chartAssets();
    this.allowActions = options.allowActions ?? DASHBOARD_DEFAULTS.allowActions;
    this.credentials = options.credentials ?? {};
    assertCredentials(this.allowActions, this.credentials);
    const prefix = options.prefix ?? QUEUE_PREFIX;
    this.registry = options.registry ?? createRegistry('dashboard');
    this.queues = new VenueQueues(options.redis, { prefix });
    this.control = new FleetVenueControl(options.redis, { prefix });
    this.liveness = new WorkerHeartbeat(options.redis, 'dashboard', { prefix });
    this.board = new QueueBoard({
      queues: this.queues,
      store: options.store,
      readOnly: !this.allowActions,
      ...(options.discoverMs === undefined ? {} : { discoverMs: options.discoverMs }),
      ...(options.logger === undefined ? {} : { logger: options.logger }),
    });
    const metrics = new FleetStatusMetrics(this.registry);
    this.status = new StatusCache(
      () => this.collect(),
      options.statusMaxAgeMs ?? DASHBOARD_DEFAULTS.statusMaxAgeMs,
      (s) => metrics.apply(s),
    );
    this.history = new HistoryCollector({
      status: () => this.status.current(),
      completions: async (venue) => {
        const t = await this.control.totals(venue);
        return { units: t.unitsOk, records: t.records };
      },
      intervalMs: options.historyIntervalMs ?? DASHBOARD_DEFAULTS.historyIntervalMs,
      ...(options.logger === undefined ? {} : { logger: options.logger }),
    });
  }

  /** A fresh snapshot (bypassing the cache). */
  collect(): Promise<FleetStatus> {
    return collectFleetStatus({
      store: this.options.store,
      queues: this.queues,
      control: this.control,
      liveness: this.liveness,
      streams: { redis: this.options.redis, prefix: this.options.prefix ?? QUEUE_PREFIX },
      ...(this.options.spoolDir === undefined ? {} : { spoolDir: this.options.spoolDir }),
    });
  }

  get port(): number | undefined {
    const addr = this.server?.address();
    return addr && typeof addr === 'object' ? addr.port : undefined;
  }

  get url(): string {
    const host = this.options.host ?? DASHBOARD_DEFAULTS.host;
    return `http://${host.includes(':') ? `[${host}]` : host}:${this.port ?? 0}`;
  }

  async start(): Promise<number> {
    // The page's script is built from its TypeScript source once per process; a source that does
    // not build stops the start, as a missing chart library does.
    const app = this.app([...this.assets, ...(await overviewAssets())]);
    // Listen first: a port in use or a bad host fails before the board touches Redis (BullMQ
    // writes each queue's meta key on first use).
    const server = await new Promise<Server>((resolve, reject) => {
      const s = app.listen(this.options.port ?? DASHBOARD_DEFAULTS.serverPort, this.options.host ?? DASHBOARD_DEFAULTS.host, (err?: Error) =>
        err ? reject(err) : resolve(s),
      );
    });
    this.server = server;
    try {
      await this.board.start();
      this.history.start();
    } catch (err) {
      await this.stop().catch(() => undefined);
      throw err;
    }
    return (server.address() as AddressInfo).port;
  }

  /** `/readyz` answers 503 from now on (SIGTERM). */
  setDraining(): void {
    this.draining = true;
  }

  async stop(): Promise<void> {
    await this.history.stop();
    await this.board.stop();
    const server = this.server;
    this.server = undefined;
    if (server) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    await this.queues.close();
  }

  private app(assets: readonly StaticAsset[]): express.Express {
    const app = express();
    app.disable('x-powered-by');
    const protect = hasCredentials(this.credentials);

    app.use((req: Request, res: Response, next: NextFunction) => {
      if (!protect || OPEN_PATHS.has(req.path)) return next();
      const auth = authenticate(req, this.credentials);
      if (!auth.ok) {
        if (this.credentials.user !== undefined) res.setHeader('WWW-Authenticate', 'Basic realm="tickfleet dashboard", charset="UTF-8"');
        res.status(401).json({ error: 'unauthorized', expected: 'a bearer token, ?token=, or basic auth (TICKFLEET_DASHBOARD_TOKEN / _USER + _PASSWORD)' });
        return;
      }
      if (auth.via === 'query-token' && this.credentials.token !== undefined) {
        // The board's UI calls its API without the query string; a cookie keeps it signed in.
        res.cookie(TOKEN_COOKIE, this.credentials.token, { httpOnly: true, sameSite: 'strict', path: '/' });
      }
      next();
    });

    const page = overviewPage({
      queuesPath: this.board.basePath,
      refreshMs: this.options.refreshMs ?? DASHBOARD_DEFAULTS.refreshMs,
      historyIntervalMs: this.history.intervalMs,
      readOnly: !this.allowActions,
    });
    app.get('/', (_req, res) => {
      res.type('html').send(page);
    });
    app.get('/api/status', (_req, res, next) => {
      this.status.current().then((s) => res.json(s), next);
    });
    app.get('/api/history', (req, res) => {
      try {
        res.json(this.history.history(historyRange(req.query.minutes)));
      } catch (err) {
        if (!(err instanceof ValidationError)) throw err;
        res.status(400).json({ error: err.message });
      }
    });
    for (const asset of assets) {
      app.get(asset.path, (_req, res) => {
        res.type(asset.contentType).setHeader('Cache-Control', asset.cacheControl);
        res.send(asset.body);
      });
    }
    app.get('/metrics', (_req, res, next) => {
      // The fleet gauges are set from a snapshot, so a scrape first makes sure it is fresh.
      this.status
        .current()
        .then(() => this.registry.metrics())
        .then((body) => res.type(this.registry.contentType).send(body), next);
    });
    app.get('/healthz', (_req, res) => {
      res.json({ status: 'ok', checks: { process: 'ok' } });
    });
    app.get('/readyz', (_req, res) => {
      this.readiness().then(
        (checks) => {
          const ok = Object.values(checks).every((c) => c === 'ok');
          res.status(ok ? 200 : 503).json({ status: ok ? 'ok' : 'fail', checks });
        },
        (err: unknown) => res.status(503).json({ status: 'fail', error: String(err) }),
      );
    });

    const readOnlyGuard = (req: Request, res: Response, next: NextFunction): void => {
      if (this.allowActions || req.method === 'GET' || req.method === 'HEAD') return next();
      res.status(403).json({ error: 'read-only dashboard', expected: 'start it with --allow-actions (and credentials) to act on units' });
    };
    // With actions allowed, each one is still held to the fleet's invariants (connector cap,
    // freezes, owed units): see internal/action-guard.ts.
    const guard = actionGuard({
      store: this.options.store,
      venueOf: (queueName) => this.board.venues().find((v) => this.board.queueName(v) === queueName),
      unitState: (venue, unitId) => this.queues.queue(venue).getJobState(unitId),
    });
    app.use(this.board.basePath, readOnlyGuard, guard, this.board.router);

    app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
      this.options.logger?.error({ err }, 'dashboard request failed');
      res.status(500).json({ error: err instanceof Error ? err.message : String(err) });
    });
    return app;
  }

  private async readiness(): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    const check = async (name: string, fn: () => Promise<unknown>): Promise<void> => {
      try {
        await fn();
        out[name] = 'ok';
      } catch (err) {
        out[name] = err instanceof Error ? err.message : String(err);
      }
    };
    await Promise.all([check('store', () => this.options.store.ping()), check('redis', () => this.options.redis.ping())]);
    if (this.draining) out.draining = 'shutting down';
    return out;
  }
}
