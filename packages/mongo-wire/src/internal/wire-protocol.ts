import { type Document, deserialize, serialize } from 'bson';

/** Opcodes (MongoDB wire protocol spec). */
export const OP_REPLY = 1;
export const OP_QUERY = 2004;
export const OP_MSG = 2013;

const HEADER_BYTES = 16;
const FLAG_CHECKSUM_PRESENT = 1 << 0;
const FLAG_MORE_TO_COME = 1 << 1;

/** A decoded request: the command document plus how to answer it. */
export interface WireRequest {
  readonly requestId: number;
  readonly opCode: number;
  /** The command with kind-1 document sequences folded in as array fields. */
  readonly command: Document;
  /** OP_QUERY: the database from `<db>.$cmd`. */
  readonly db?: string;
  /** OP_MSG moreToCome: the client expects no reply (w:0 writes). */
  readonly moreToCome: boolean;
  /** Set when the request is a legacy operation this server refuses (answered with this error). */
  readonly refusal?: string;
}

export class WireProtocolError extends Error {
  override readonly name = 'WireProtocolError';
}

function readCString(buf: Buffer, offset: number): [string, number] {
  const end = buf.indexOf(0, offset);
  if (end < 0) throw new WireProtocolError('unterminated cstring');
  return [buf.toString('utf8', offset, end), end + 1];
}

/** Length of the complete message at the start of `buf`, or undefined if incomplete. */
export function frameLength(buf: Buffer): number | undefined {
  if (buf.length < 4) return undefined;
  const length = buf.readInt32LE(0);
  if (length < HEADER_BYTES) throw new WireProtocolError(`invalid message length ${length}`);
  return buf.length >= length ? length : undefined;
}

/** Decodes one complete message (OP_MSG or OP_QUERY). */
export function decodeRequest(message: Buffer): WireRequest {
  const requestId = message.readInt32LE(4);
  const opCode = message.readInt32LE(12);
  if (opCode === OP_MSG) return decodeOpMsg(message, requestId);
  if (opCode === OP_QUERY) return decodeOpQuery(message, requestId);
  throw new WireProtocolError(`unsupported opcode ${opCode}`);
}

function decodeOpMsg(message: Buffer, requestId: number): WireRequest {
  const flags = message.readUInt32LE(HEADER_BYTES);
  // The CRC-32C checksum, when present, trails the sections; TCP already guards integrity.
  const end = flags & FLAG_CHECKSUM_PRESENT ? message.length - 4 : message.length;
  let offset = HEADER_BYTES + 4;
  let body: Document | undefined;
  const sequences: [string, Document[]][] = [];
  while (offset < end) {
    const kind = message.readUInt8(offset);
    offset += 1;
    if (kind === 0) {
      const size = message.readInt32LE(offset);
      body = deserialize(message.subarray(offset, offset + size));
      offset += size;
    } else if (kind === 1) {
      const size = message.readInt32LE(offset);
      const sectionEnd = offset + size;
      const [identifier, docsStart] = readCString(message, offset + 4);
      const docs: Document[] = [];
      let p = docsStart;
      while (p < sectionEnd) {
        const docSize = message.readInt32LE(p);
        docs.push(deserialize(message.subarray(p, p + docSize)));
        p += docSize;
      }
      sequences.push([identifier, docs]);
      offset = sectionEnd;
    } else {
      throw new WireProtocolError(`unknown OP_MSG section kind ${kind}`);
    }
  }
  if (!body) throw new WireProtocolError('OP_MSG without a body section');
  for (const [identifier, docs] of sequences) body[identifier] = docs;
  return { requestId, opCode: OP_MSG, command: body, moreToCome: (flags & FLAG_MORE_TO_COME) !== 0 };
}

function decodeOpQuery(message: Buffer, requestId: number): WireRequest {
  let offset = HEADER_BYTES + 4;
  const [fullCollectionName, next] = readCString(message, offset);
  offset = next + 8; // numberToSkip, numberToReturn
  const size = message.readInt32LE(offset);
  let command = deserialize(message.subarray(offset, offset + size));
  // Legacy read-preference wrapping: {$query: {...}, $readPreference: ...}.
  if (command.$query && typeof command.$query === 'object') command = command.$query as Document;
  const dot = fullCollectionName.indexOf('.');
  const db = dot < 0 ? fullCollectionName : fullCollectionName.slice(0, dot);
  const collection = dot < 0 ? '' : fullCollectionName.slice(dot + 1);
  if (collection !== '$cmd') {
    const refusal = `Unsupported OP_QUERY on ${fullCollectionName}: only commands (<db>.$cmd) are accepted`;
    return { requestId, opCode: OP_QUERY, command, db, moreToCome: false, refusal };
  }
  return { requestId, opCode: OP_QUERY, command, db, moreToCome: false };
}

function header(length: number, requestId: number, responseTo: number, opCode: number): Buffer {
  const buf = Buffer.alloc(HEADER_BYTES);
  buf.writeInt32LE(length, 0);
  buf.writeInt32LE(requestId, 4);
  buf.writeInt32LE(responseTo, 8);
  buf.writeInt32LE(opCode, 12);
  return buf;
}

/** OP_MSG reply with a single kind-0 section and no flags. */
export function encodeOpMsg(requestId: number, responseTo: number, doc: Document): Buffer {
  const body = serialize(doc);
  const prefix = Buffer.alloc(5); // flagBits (0) + section kind 0
  const length = HEADER_BYTES + prefix.length + body.length;
  return Buffer.concat([header(length, requestId, responseTo, OP_MSG), prefix, body]);
}

/** OP_REPLY (answer to an OP_QUERY command): one document, cursor id 0. */
export function encodeOpReply(requestId: number, responseTo: number, doc: Document): Buffer {
  const body = serialize(doc);
  const fields = Buffer.alloc(20);
  fields.writeInt32LE(8, 0); // responseFlags: AwaitCapable
  fields.writeBigInt64LE(0n, 4); // cursorID
  fields.writeInt32LE(0, 12); // startingFrom
  fields.writeInt32LE(1, 16); // numberReturned
  const length = HEADER_BYTES + fields.length + body.length;
  return Buffer.concat([header(length, requestId, responseTo, OP_REPLY), fields, body]);
}
