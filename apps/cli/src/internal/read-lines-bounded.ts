import { closeSync, openSync, readSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { ValidationError } from '@tickfleet/core';

/** What a bounded read is of, for its errors: the argument (`--file`), what the file should hold, and the byte bound. */
export interface BoundedFile {
  argName: string;
  /** `a symbol file`, `a scenario JSON file`. */
  what: string;
  maxBytes: number;
}

const CHUNK_BYTES = 64 * 1024;

/**
 * Reads a file an operator named, line by line (`\n` or `\r\n`), never holding or reading much
 * more than `maxBytes`: a device (`/dev/zero`), a FIFO or a file growing while read is refused
 * once past the bound, where a stat size (0 for those) says nothing. `onLine` may throw to stop
 * the read early (a bound on what the lines hold).
 */
export function readLinesBounded(path: string, file: BoundedFile, onLine: (line: string) => void): void {
  const unreadable = (err: unknown): ValidationError =>
    new ValidationError(file.argName, `${file.what} this process can read (${(err as NodeJS.ErrnoException).code ?? String(err)})`, path);
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    throw unreadable(err);
  }
  try {
    const buf = Buffer.allocUnsafe(CHUNK_BYTES);
    const decoder = new StringDecoder('utf8');
    let total = 0;
    let partial = '';
    for (;;) {
      let n: number;
      try {
        n = readSync(fd, buf, 0, buf.length, null);
      } catch (err) {
        throw unreadable(err);
      }
      if (n === 0) break;
      total += n;
      if (total > file.maxBytes) throw new ValidationError(file.argName, `${file.what} of at most ${file.maxBytes} bytes`, path);
      const lines = (partial + decoder.write(buf.subarray(0, n))).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) onLine(line.endsWith('\r') ? line.slice(0, -1) : line);
    }
    const last = partial + decoder.end();
    if (last !== '') onLine(last.endsWith('\r') ? last.slice(0, -1) : last);
  } finally {
    closeSync(fd);
  }
}
