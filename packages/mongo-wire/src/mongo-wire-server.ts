import { createServer, type Server, type Socket } from 'node:net';
import { type Document } from 'bson';
import { CommandDispatcher } from './internal/command-dispatcher.js';
import { decodeRequest, encodeOpMsg, encodeOpReply, frameLength, OP_QUERY, type WireRequest, WireProtocolError } from './internal/wire-protocol.js';

/**
 * Defaults of {@link MongoWireServerOptions}: loopback, a free port, and MongoDB's own TTL
 * monitor period (60 s).
 */
export const MONGO_WIRE_DEFAULTS = Object.freeze({ port: 0, host: '127.0.0.1', ttlSweepMs: 60_000 });

/** Options of {@link MongoWireServer}. */
export interface MongoWireServerOptions {
  /**
   * TCP port to listen on; 0 picks a free one.
   * @defaultValue {@link MONGO_WIRE_DEFAULTS.port}
   */
  readonly port?: number;
  /**
   * Interface to bind.
   * @defaultValue {@link MONGO_WIRE_DEFAULTS.host}
   */
  readonly host?: string;
  /**
   * How often TTL indexes are applied (as MongoDB's TTL monitor does).
   * @defaultValue {@link MONGO_WIRE_DEFAULTS.ttlSweepMs}
   */
  readonly ttlSweepMs?: number;
  /**
   * The server's clock, epoch ms: every command's `$$NOW` and the TTL sweeps. A test that needs the
   * store to decide at known times sets one (a real mongod's clock cannot be set).
   * @defaultValue Date.now
   */
  readonly clock?: () => number;
}

/** Refuse absurd frames before buffering them (MongoDB's maxMessageSizeBytes is 48 MB). */
const MAX_FRAME_BYTES = 48_000_000 + 16 * 1024;

/**
 * An in-memory server speaking the MongoDB wire protocol (OP_MSG, plus OP_QUERY/OP_REPLY for
 * the driver's legacy handshake) well enough for the official driver to run tickfleet's
 * store and sink suites. Test infrastructure only: state lives in this process's memory and
 * vanishes with it; it is never a production store.
 */
export class MongoWireServer {
  private readonly options: Required<MongoWireServerOptions>;
  private readonly dispatcher: CommandDispatcher;
  private readonly sockets = new Set<Socket>();
  private server: Server | undefined;
  private ttlTimer: NodeJS.Timeout | undefined;
  private nextConnectionId = 1;
  private nextRequestId = 1;
  private boundPort = 0;

  constructor(options: MongoWireServerOptions = {}) {
    this.options = {
      port: options.port ?? MONGO_WIRE_DEFAULTS.port,
      host: options.host ?? MONGO_WIRE_DEFAULTS.host,
      ttlSweepMs: options.ttlSweepMs ?? MONGO_WIRE_DEFAULTS.ttlSweepMs,
      clock: options.clock ?? Date.now,
    };
    this.dispatcher = new CommandDispatcher(this.options.clock);
  }

  /** The port actually bound (after {@link start}). */
  get port(): number {
    return this.boundPort;
  }

  /** `mongodb://host:port/`; append a database name. */
  get url(): string {
    const host = this.options.host.includes(':') ? `[${this.options.host}]` : this.options.host;
    return `mongodb://${host}:${this.boundPort}/`;
  }

  async start(): Promise<void> {
    if (this.server) return;
    const server = createServer((socket) => this.accept(socket));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port, this.options.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const address = server.address();
    this.boundPort = address && typeof address === 'object' ? address.port : this.options.port;
    this.server = server;
    this.ttlTimer = setInterval(() => this.dispatcher.sweepExpired(new Date(this.options.clock())), this.options.ttlSweepMs);
    this.ttlTimer.unref();
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    if (this.ttlTimer) clearInterval(this.ttlTimer);
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Runs a command directly, bypassing the network (used by tests and the TTL sweep). */
  runCommand(command: Document, db = 'admin'): Document {
    return this.dispatcher.execute({ ...command, $db: db }, { connectionId: 0, peer: 'in-process' });
  }

  /** Applies TTL indexes now; returns the number of documents removed. */
  sweepExpired(now = new Date(this.options.clock())): number {
    return this.dispatcher.sweepExpired(now);
  }

  private accept(socket: Socket): void {
    const connectionId = this.nextConnectionId++;
    const peer = `${socket.remoteAddress ?? 'unknown'}:${socket.remotePort ?? 0}`;
    this.sockets.add(socket);
    socket.setNoDelay(true);
    let pending: Buffer = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      try {
        for (;;) {
          if (pending.length >= 4 && pending.readInt32LE(0) > MAX_FRAME_BYTES) {
            throw new WireProtocolError(`message of ${pending.readInt32LE(0)} bytes exceeds the maximum`);
          }
          const length = frameLength(pending);
          if (length === undefined) break;
          const message = pending.subarray(0, length);
          pending = pending.subarray(length);
          const reply = this.handle(decodeRequest(message), connectionId, peer);
          if (reply) socket.write(reply);
        }
      } catch {
        // A malformed frame desynchronises the stream; MongoDB closes the connection too.
        socket.destroy();
      }
    });
    socket.on('error', () => socket.destroy());
    socket.on('close', () => this.sockets.delete(socket));
  }

  /** Executes one request synchronously and encodes its reply (none for moreToCome). */
  private handle(request: WireRequest, connectionId: number, peer: string): Buffer | undefined {
    const origin = { connectionId, peer };
    const result = request.refusal
      ? { ok: 0, errmsg: request.refusal, code: 352, codeName: 'UnsupportedOpQueryCommand' }
      : this.dispatcher.execute(request.command, origin, request.db);
    if (request.moreToCome) return undefined;
    const requestId = this.nextRequestId++ & 0x7fffffff;
    return request.opCode === OP_QUERY ? encodeOpReply(requestId, request.requestId, result) : encodeOpMsg(requestId, request.requestId, result);
  }
}
