import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Reads `packages/venues/fixtures/<path>` as text. */
export function fixture(path: string): string {
  return readFileSync(new URL(`../fixtures/${path}`, import.meta.url), 'utf8');
}

export interface FixtureResponse {
  status?: number;
  headers?: Record<string, string>;
  body: string | Buffer;
  /** Hold the response this long before answering (throttling, timeouts). */
  delayMs?: number;
}

export interface FixtureRequest {
  path: string;
  query: URLSearchParams;
  url: string;
  /** Request headers, names lower-case (credentials sent in headers are checked here). */
  headers: Record<string, string | string[] | undefined>;
  method: string;
  /** The request body as text (empty for a GET). */
  body: string;
}

export type FixtureRoute = (req: FixtureRequest, server: FixtureServer) => FixtureResponse | undefined;

/**
 * A real local HTTP peer that answers with fixture bytes, for adapter tests that must see exact venue
 * bodies and headers. Records every request it receives.
 */
export class FixtureServer {
  readonly requests: FixtureRequest[] = [];
  url = '';

  private constructor(private readonly server: Server) {}

  static async start(route: FixtureRoute): Promise<FixtureServer> {
    const box: { self?: FixtureServer } = {};
    const server = createServer((req: IncomingMessage, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => answerRequest(req, Buffer.concat(chunks).toString('utf8'), res));
    });
    const answerRequest = (req: IncomingMessage, body: string, res: ServerResponse): void => {
      const parsed = new URL(req.url ?? '/', 'http://127.0.0.1');
      const request = { path: parsed.pathname, query: parsed.searchParams, url: req.url ?? '/', headers: req.headers, method: req.method ?? 'GET', body };
      box.self?.requests.push(request);
      const answer = box.self ? route(request, box.self) : undefined;
      const send = (): void => {
        if (!answer) {
          res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"no fixture route"}');
          return;
        }
        res.writeHead(answer.status ?? 200, { 'content-type': 'application/json', ...answer.headers }).end(answer.body);
      };
      if (answer?.delayMs) setTimeout(send, answer.delayMs);
      else send();
    };
    const self = new FixtureServer(server);
    box.self = self;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    self.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return self;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
