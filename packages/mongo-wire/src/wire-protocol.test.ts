/**
 * Wire-level behaviour the driver does not always exercise: the legacy OP_QUERY handshake
 * answered with OP_REPLY, OP_MSG kind-1 document sequences, the checksum flag, moreToCome
 * (no reply), and closing the connection on an unknown opcode. Raw TCP, no driver.
 */
import { connect, type Socket } from 'node:net';
import { deserialize, type Document, serialize } from 'bson';
import { startMongoWire, type MongoWireHandle } from './index.js';

let wire: MongoWireHandle;
beforeAll(async () => {
  wire = await startMongoWire();
});
afterAll(async () => {
  await wire.stop();
});

/** CRC-32C (Castagnoli), as OP_MSG checksums use. */
function crc32c(buf: Buffer): number {
  let crc = 0xffffffff;
  for (const byte of buf) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}

function header(length: number, requestId: number, opCode: number): Buffer {
  const h = Buffer.alloc(16);
  h.writeInt32LE(length, 0);
  h.writeInt32LE(requestId, 4);
  h.writeInt32LE(0, 8);
  h.writeInt32LE(opCode, 12);
  return h;
}

function opMsg(requestId: number, body: Document, sequences: [string, Document[]][] = [], flags = 0): Buffer {
  const parts: Buffer[] = [Buffer.from([0]), Buffer.from(serialize(body))];
  for (const [id, docs] of sequences) {
    const payload = Buffer.concat([Buffer.from(`${id}\0`), ...docs.map((d) => Buffer.from(serialize(d)))]);
    const size = Buffer.alloc(4);
    size.writeInt32LE(payload.length + 4);
    parts.push(Buffer.from([1]), size, payload);
  }
  const flagBuf = Buffer.alloc(4);
  flagBuf.writeUInt32LE(flags);
  const checksum = (flags & 1) !== 0;
  const length = 16 + 4 + parts.reduce((n, p) => n + p.length, 0) + (checksum ? 4 : 0);
  const message = Buffer.concat([header(length, requestId, 2013), flagBuf, ...parts]);
  if (!checksum) return message;
  const crc = Buffer.alloc(4);
  crc.writeUInt32LE(crc32c(message));
  return Buffer.concat([message, crc]);
}

function opQuery(requestId: number, fullCollectionName: string, query: Document): Buffer {
  const body = Buffer.concat([
    Buffer.alloc(4),
    Buffer.from(`${fullCollectionName}\0`),
    Buffer.from([0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]),
    Buffer.from(serialize(query)),
  ]);
  return Buffer.concat([header(16 + body.length, requestId, 2004), body]);
}

interface Reply {
  responseTo: number;
  opCode: number;
  doc: Document;
}

/** A connection that collects whole replies. */
class RawClient {
  private buffer = Buffer.alloc(0);
  private readonly replies: Reply[] = [];
  private waiters: (() => void)[] = [];
  closed = false;
  readonly socket: Socket;

  constructor(port: number) {
    this.socket = connect(port, '127.0.0.1');
    this.socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      while (this.buffer.length >= 4 && this.buffer.length >= this.buffer.readInt32LE(0)) {
        const length = this.buffer.readInt32LE(0);
        const message = this.buffer.subarray(0, length);
        this.buffer = this.buffer.subarray(length);
        const opCode = message.readInt32LE(12);
        const docStart = opCode === 1 ? 36 : 21;
        this.replies.push({ responseTo: message.readInt32LE(8), opCode, doc: deserialize(message.subarray(docStart)) });
      }
      this.wake();
    });
    this.socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  async next(): Promise<Reply> {
    while (this.replies.length === 0) {
      if (this.closed) throw new Error('connection closed');
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    return this.replies.shift() as Reply;
  }

  async untilClosed(): Promise<void> {
    while (!this.closed) await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  send(buf: Buffer): void {
    this.socket.write(buf);
  }
}

it('answers the legacy OP_QUERY isMaster with OP_REPLY', async () => {
  const client = new RawClient(wire.port);
  client.send(opQuery(7, 'admin.$cmd', { isMaster: 1, helloOk: true }));
  const reply = await client.next();
  expect(reply).toMatchObject({ responseTo: 7, opCode: 1 });
  expect(reply.doc).toMatchObject({ ok: 1, ismaster: true, maxWireVersion: 21, helloOk: true });
  client.send(opQuery(8, 'admin.users', {}));
  expect((await client.next()).doc).toMatchObject({ ok: 0, code: 352 });
  client.socket.destroy();
});

it('folds kind-1 document sequences into the command, with or without a checksum', async () => {
  const client = new RawClient(wire.port);
  client.send(opMsg(1, { insert: 'seq', $db: 'wire' }, [['documents', [{ _id: 1 }, { _id: 2 }]]]));
  expect(await client.next()).toMatchObject({ responseTo: 1, opCode: 2013, doc: { n: 2, ok: 1 } });
  client.send(opMsg(2, { insert: 'seq', $db: 'wire' }, [['documents', [{ _id: 3 }]]], 1));
  expect((await client.next()).doc).toMatchObject({ n: 1, ok: 1 });
  client.send(opMsg(3, { find: 'seq', filter: {}, $db: 'wire' }));
  const found = await client.next();
  expect((found.doc.cursor as Document).firstBatch).toEqual([{ _id: 1 }, { _id: 2 }, { _id: 3 }]);
  client.socket.destroy();
});

it('sends no reply for moreToCome (unacknowledged) messages', async () => {
  const client = new RawClient(wire.port);
  client.send(opMsg(10, { insert: 'fire', documents: [{ _id: 'x' }], $db: 'wire', writeConcern: { w: 0 } }, [], 2));
  client.send(opMsg(11, { count: 'fire', $db: 'wire' }));
  const reply = await client.next();
  expect(reply.responseTo).toBe(11);
  expect(reply.doc).toMatchObject({ n: 1, ok: 1 });
  client.socket.destroy();
});

it('closes the connection on an unknown opcode', async () => {
  const client = new RawClient(wire.port);
  const body = Buffer.from(serialize({ x: 1 }));
  client.send(Buffer.concat([header(16 + body.length, 1, 9999), body]));
  await client.untilClosed();
  expect(client.closed).toBe(true);
});

it('expires documents through TTL indexes', async () => {
  const server = wire.server;
  server.runCommand({ createIndexes: 'sessions', indexes: [{ key: { at: 1 }, name: 'ttl', expireAfterSeconds: 60 }] }, 'ttl');
  const now = Date.now();
  server.runCommand(
    { insert: 'sessions', documents: [{ _id: 'old', at: new Date(now - 120_000) }, { _id: 'new', at: new Date(now) }, { _id: 'none' }] },
    'ttl',
  );
  expect(server.sweepExpired(new Date(now))).toBe(1);
  const found = server.runCommand({ find: 'sessions' }, 'ttl');
  expect((found.cursor as Document).firstBatch).toEqual([{ _id: 'new', at: new Date(now) }, { _id: 'none' }]);
});
