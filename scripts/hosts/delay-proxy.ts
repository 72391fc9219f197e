/**
 * A TCP proxy that holds every chunk for a fixed delay in each direction: a network round trip
 * between hosts where the kernel has no `netem`. Runs inside the client's host (its network
 * namespace), so that host's link and route faults cut the proxied link too:
 *
 *   node --import tsx scripts/hosts/delay-proxy.ts --delay-ms 5 127.0.0.1:6379=10.77.3.2:6379 [more…]
 *
 * Prints one line `delay-proxy listening <n>` once every listener is bound; runs until SIGTERM.
 */
import { createServer, connect, type Socket } from 'node:net';
import { parseArgs } from 'node:util';

export const DELAY_PROXY_DEFAULTS = {
  /** One-way delay per chunk: a 10 ms round trip, a link between racks or zones. */
  delayMs: 5,
} as const;

interface Route {
  listenHost: string;
  listenPort: number;
  targetHost: string;
  targetPort: number;
}

function parseRoute(text: string): Route {
  const m = /^([\d.]+):(\d+)=([\d.]+):(\d+)$/.exec(text);
  if (!m) throw new Error(`delay-proxy: a route is listenHost:port=targetHost:port, got '${text}'`);
  return { listenHost: m[1]!, listenPort: Number(m[2]), targetHost: m[3]!, targetPort: Number(m[4]) };
}

/** Forwards `from` to `to`, each chunk after `delayMs`; equal delays keep the order (timers of one delay fire in order). */
function pipeDelayed(from: Socket, to: Socket, delayMs: number): void {
  from.on('data', (chunk: Buffer) => {
    setTimeout(() => {
      if (!to.destroyed) to.write(chunk);
    }, delayMs);
  });
  from.on('end', () => setTimeout(() => to.end(), delayMs));
}

function serve(route: Route, delayMs: number): Promise<void> {
  const server = createServer((client) => {
    client.setNoDelay(true);
    const upstream = connect({ host: route.targetHost, port: route.targetPort });
    upstream.setNoDelay(true);
    pipeDelayed(client, upstream, delayMs);
    pipeDelayed(upstream, client, delayMs);
    // A reset on either side resets the other, as a broken link would.
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => setTimeout(() => client.destroy(), delayMs));
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(route.listenPort, route.listenHost, () => resolve());
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
  await Promise.all(routes.map((r) => serve(r, delayMs)));
  process.stdout.write(`delay-proxy listening ${routes.length}\n`);
  process.on('SIGTERM', () => process.exit(0));
}
