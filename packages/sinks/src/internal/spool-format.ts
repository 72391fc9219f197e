/**
 * Spool segment format: a sequence of frames `[u32 LE body length][body]`, the body being the
 * JSON of one Envelope v1. Segment files are `spool_000001.dat`, `spool_000002.dat`, … so
 * lexicographic order is write order.
 */
export const HEADER_BYTES = 4;
/** A length above this cannot be a frame we wrote (segments default to 64 MiB): the tail is garbage. */
export const MAX_FRAME_BYTES = 256 * 1024 * 1024;

const NAME = /^spool_(\d{6,})\.dat$/;

export function segmentName(seq: number): string {
  return `spool_${String(seq).padStart(6, '0')}.dat`;
}

export function segmentSeq(name: string): number | undefined {
  const m = NAME.exec(name);
  return m ? Number(m[1]) : undefined;
}

export function encodeFrame(body: string): Buffer {
  const bytes = Buffer.from(body, 'utf8');
  const frame = Buffer.allocUnsafe(HEADER_BYTES + bytes.length);
  frame.writeUInt32LE(bytes.length, 0);
  bytes.copy(frame, HEADER_BYTES);
  return frame;
}

export interface ScanResult {
  /** Bodies of the complete frames, in order. */
  bodies: Buffer[];
  /** Bytes covered by complete frames; anything after is a partial record. */
  completeBytes: number;
}

/** Splits a segment's bytes into complete frames; stops at the first partial or impossible one. */
export function scanFrames(buf: Buffer): ScanResult {
  const bodies: Buffer[] = [];
  let off = 0;
  while (off + HEADER_BYTES <= buf.length) {
    const len = buf.readUInt32LE(off);
    if (len === 0 || len > MAX_FRAME_BYTES || off + HEADER_BYTES + len > buf.length) break;
    bodies.push(buf.subarray(off + HEADER_BYTES, off + HEADER_BYTES + len));
    off += HEADER_BYTES + len;
  }
  return { bodies, completeBytes: off };
}

/** Whether an fs error means the disk (or the user's quota) has no room left. */
export function isDiskFull(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT';
}
