import { WebSocket, type RawData } from 'ws';
import { waitFor } from '@tickfleet/testkit';

/** A real `ws` client that records every frame it receives, for asserting against the emulation's counters. */
export class RecordingSocket {
  /** Text frames that parsed as JSON, in arrival order. */
  readonly messages: unknown[] = [];
  /** Text frames that did not parse. */
  readonly unparsable: string[] = [];
  binaryFrames = 0;
  closed = false;
  closeCode = 0;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data: RawData, isBinary: boolean) => {
      if (isBinary) {
        this.binaryFrames += 1;
        return;
      }
      const text = Buffer.isBuffer(data) ? data.toString('utf8') : String(data);
      try {
        this.messages.push(JSON.parse(text));
      } catch {
        this.unparsable.push(text);
      }
    });
    ws.on('close', (code: number) => {
      this.closed = true;
      this.closeCode = code;
    });
    ws.on('error', () => undefined);
  }

  /** Opens `url`; rejects with `HTTP <status>` when the upgrade is refused. */
  static open(url: string): Promise<RecordingSocket> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url);
      const socket = new RecordingSocket(ws);
      ws.once('open', () => resolve(socket));
      ws.once('unexpected-response', (_req, res) => {
        reject(new Error(`HTTP ${res.statusCode ?? 0}`));
        ws.terminate();
      });
      ws.once('error', (err) => reject(err));
    });
  }

  send(value: unknown): void {
    this.ws.send(typeof value === 'string' ? value : JSON.stringify(value));
  }

  /** Frames received of any kind. */
  get frames(): number {
    return this.messages.length + this.unparsable.length + this.binaryFrames;
  }

  /** Waits for the first recorded message (from index `from`) that `match` accepts. */
  async next<T>(match: (m: unknown) => boolean, what: string, from = 0): Promise<T> {
    return (await waitFor(() => this.messages.slice(from).find(match), what)) as T;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.ws.close();
    await waitFor(() => this.closed, 'the socket to close');
  }
}
