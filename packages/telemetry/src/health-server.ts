import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { LISTEN_DEFAULTS } from '@tickfleet/core';

export type HealthCheck = () => Promise<boolean | string> | boolean | string;

export interface HealthServerOptions {
  registry: Registry;
  /** 0 picks a free port. @defaultValue {@link LISTEN_DEFAULTS.port} */
  port?: number;
  /** @defaultValue {@link LISTEN_DEFAULTS.host} */
  host?: string;
  /** Liveness: the process is not wedged. A string result is a failure reason. */
  liveness?: Record<string, HealthCheck>;
  /** Readiness: dependencies reachable and the role accepting work. */
  readiness?: Record<string, HealthCheck>;
  /**
   * Runtime state added to the `/healthz` body under its keys (the worker's venues, streams, spool
   * and dedup); never secrets. May read (a promise): it must bound its own wait, since liveness probes poll it.
   */
  details?: () => Record<string, unknown> | Promise<Record<string, unknown>>;
  /** Extra routes served beside the health endpoints (e.g. a JSON status). */
  routes?: Record<string, (req: IncomingMessage, res: ServerResponse) => void | Promise<void>>;
}

/** The HTTP surface every role serves: `/metrics` (Prometheus text), `/healthz`, `/readyz`. */
export class HealthServer {
  private server: Server | undefined;
  private draining = false;

  constructor(private readonly options: HealthServerOptions) {}

  async start(): Promise<number> {
    const server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(String(err));
      });
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port ?? LISTEN_DEFAULTS.port, this.options.host ?? LISTEN_DEFAULTS.host, () => resolve());
    });
    return (server.address() as AddressInfo).port;
  }

  get port(): number | undefined {
    const addr = this.server?.address();
    return addr && typeof addr === 'object' ? addr.port : undefined;
  }

  /** Marks the process as shutting down: `/readyz` answers 503 from now on. */
  setDraining(): void {
    this.draining = true;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (path === '/metrics') {
      const body = await this.options.registry.metrics();
      res.writeHead(200, { 'content-type': this.options.registry.contentType });
      res.end(body);
      return;
    }
    if (path === '/healthz' || path === '/readyz') {
      const checks = path === '/healthz' ? this.options.liveness : this.options.readiness;
      const results = await runChecks(checks ?? {});
      if (path === '/readyz' && this.draining) results.draining = 'shutting down';
      const ok = Object.values(results).every((r) => r === 'ok');
      res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' });
      const details = path === '/healthz' ? await this.options.details?.() : undefined;
      res.end(JSON.stringify({ status: ok ? 'ok' : 'fail', checks: results, ...details }));
      return;
    }
    const route = this.options.routes?.[path];
    if (route) {
      await route(req, res);
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not found');
  }
}

async function runChecks(checks: Record<string, HealthCheck>): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  await Promise.all(
    Object.entries(checks).map(async ([name, check]) => {
      try {
        const r = await check();
        out[name] = r === true ? 'ok' : r === false ? 'fail' : r;
      } catch (err) {
        out[name] = err instanceof Error ? err.message : String(err);
      }
    }),
  );
  return out;
}
