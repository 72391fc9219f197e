/**
 * A TCP proxy that holds every chunk for a fixed delay in each direction: a network round trip
 * between hosts where the kernel has no `netem`. Runs inside the client's host (its network
 * namespace), so that host's link and route faults cut the proxied link too:
 *
 *   node --import tsx scripts/hosts/delay-proxy.ts --delay-ms 5 127.0.0.1:6379=10.77.3.2:6379 [more…]
 *
 * Prints one line `delay-proxy listening <n>` once every listener is bound; runs until SIGTERM.
 * Tests start one in-process ({@link startDelayProxy}) and break its connections mid-request.
 */
import { createServer, connect, type Socket } from 'node:net';
import { parseArgs } from 'node:util';

export const DELAY_PROXY_DEFAULTS = {
  /** One-way delay per chunk: a 10 ms round trip, a link between racks or zones. */
  delayMs: 5,
} as const;

export interface Route {
  listenHost: string;
  /** 0: a free port ({@link DelayProxy.port}). */
  listenPort: number;
  targetHost: string;
  targetPort: number;
}

function parseRoute(text: string): Route {
  const m = /^([\d.]+):(\d+)=([\d.]+):(\d+)$/.exec(text);
  if (!m) throw new Error(`delay-proxy: a route is listenHost:port=targetHost:port, got '${text}'`);
  return { listenHost: m[1]!, listenPort: Number(m[2]), targetHost: m[3]!, targetPort: Number(m[4]) };
}

/**
 * A link that breaks once: after `requestBytes` (client to target) and then `replyBytes` (target
 * to client) have passed since it was armed, the reply chunk that crosses the second mark is
 * dropped and every open connection reset, as a link lost while replies are on the wire.
 */
export interface CutPlan {
  requestBytes?: number;
  replyBytes?: number;
}

export interface DelayProxy {
  readonly port: number;
  /** Connections reset by {@link cut} plans so far. */
  readonly cuts: number;
  cut(plan: CutPlan): void;
  close(): Promise<void>;
}

/** Listens on `route` and forwards each chunk after `delayMs`; equal delays keep the order (timers of one delay fire in order). */
export function startDelayProxy(route: Route, delayMs: number = DELAY_PROXY_DEFAULTS.delayMs): Promise<DelayProxy> {
  const open = new Set<Socket>();
  let plan: { request: number; reply: number } | undefined;
  let cuts = 0;
  const resetAll = (): void => {
    plan = undefined;
    for (const s of open) {
      s.resetAndDestroy();
      cuts++;
    }
  };
  const server = createServer((client) => {
    client.setNoDelay(true);
    const upstream = connect({ host: route.targetHost, port: route.targetPort });
    upstream.setNoDelay(true);
    open.add(client);
    client.on('close', () => open.delete(client));
    client.on('data', (chunk: Buffer) => {
      if (plan) plan.request -= chunk.length;
      setTimeout(() => {
        if (!upstream.destroyed) upstream.write(chunk);
      }, delayMs);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (plan && plan.request <= 0) {
        plan.reply -= chunk.length;
        if (plan.reply <= 0) return resetAll();
      }
      setTimeout(() => {
        if (!client.destroyed) client.write(chunk);
      }, delayMs);
    });
    client.on('end', () => setTimeout(() => upstream.end(), delayMs));
    upstream.on('end', () => setTimeout(() => client.end(), delayMs));
    // A reset on either side resets the other, as a broken link would.
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => setTimeout(() => client.destroy(), delayMs));
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(route.listenPort, route.listenHost, () => {
      const address = server.address();
      resolve({
        port: typeof address === 'object' && address ? address.port : route.listenPort,
        get cuts() {
          return cuts;
        },
        cut: (p) => {
          plan = { request: p.requestBytes ?? 0, reply: p.replyBytes ?? 1 };
        },
        close: () =>
          new Promise<void>((done) => {
            for (const s of open) s.destroy();
            server.close(() => done());
          }),
      });
    });
  });
}

const isMain = process.argv[1]?.endsWith('delay-proxy.ts');
if (isMain) {
  const { values, positionals } = parseArgs({
    options: { 'delay-ms': { type: 'string', default: String(DELAY_PROXY_DEFAULTS.delayMs) } },
    allowPositionals: true,
  });
  const delayMs = Number(values['delay-ms']);
  const routes = positionals.map(parseRoute);
  await Promise.all(routes.map((r) => startDelayProxy(r, delayMs)));
  process.stdout.write(`delay-proxy listening ${routes.length}\n`);
  process.on('SIGTERM', () => process.exit(0));
}
