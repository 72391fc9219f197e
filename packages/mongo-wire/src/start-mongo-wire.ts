import { MongoWireServer, type MongoWireServerOptions } from './mongo-wire-server.js';

/** A running wire server: append a database name to `url`. */
export interface MongoWireHandle {
  /** `mongodb://127.0.0.1:<port>/` */
  readonly url: string;
  readonly port: number;
  readonly server: MongoWireServer;
  stop(): Promise<void>;
}

/** Starts an in-memory MongoDB wire-protocol test server on a free (or the given) port. */
export async function startMongoWire(options: MongoWireServerOptions = {}): Promise<MongoWireHandle> {
  const server = new MongoWireServer(options);
  await server.start();
  return { url: server.url, port: server.port, server, stop: () => server.stop() };
}
