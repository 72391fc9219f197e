import { WebSocket, type RawData } from 'ws';
import { unitFloat } from '../data/random.js';
import type { StreamScenario, StreamVenueName } from '../scenario.js';
import type { StreamStats } from '../stats.js';

/** What a connection reads at send time: the scenario and counters change under it (PATCH, reset). */
export interface StreamEnv {
  settings(): StreamScenario;
  stats(): StreamStats;
  seed(): number;
  now(): number;
}

export function freshStreamStats(): StreamStats {
  return {
    connections: 0,
    openConnections: 0,
    connectionsRefused: 0,
    messagesSent: 0,
    gapsInjected: 0,
    binaryFrames: 0,
    garbledFrames: 0,
    silencedMessages: 0,
    disconnects: 0,
    checksumCorruptions: 0,
    rateLimitCloses: 0,
    subscriptions: 0,
  };
}

/** How a data message left: intact, or one of the injected faults. */
export type Delivery = 'sent' | 'gap' | 'binary' | 'garbled' | 'silenced' | 'closed';

/**
 * One accepted WebSocket with the scenario's faults applied to its data messages. Faults are drawn from
 * (seed, venue, connection serial, message serial), so a scenario replays identically after a reset.
 */
export class StreamConnection {
  /** Data messages this connection was due so far (the N of gapEvery / disconnectEvery). */
  private dataSerial = 0;

  constructor(
    readonly ws: WebSocket,
    readonly venue: StreamVenueName,
    readonly serial: number,
    private readonly env: StreamEnv,
  ) {}

  stats(): StreamStats {
    return this.env.stats();
  }

  /** The emulation's clock (a ManualClock in tests), for the times a venue prints in its replies. */
  now(): number {
    return this.env.now();
  }

  settings(): StreamScenario {
    return this.env.settings();
  }

  get open(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  silent(): boolean {
    const now = this.env.now();
    for (const w of this.env.settings().silences ?? []) if (now >= w.fromMs && now < w.toMs) return true;
    return false;
  }

  /** A reply to the client's own request: never faulted (the venue answered; the market is what misbehaves). */
  reply(text: string): void {
    if (this.open) this.ws.send(text);
  }

  /** A heartbeat-like message (Kraken heartbeat): skipped while silent, never counted. */
  keepAlive(text: string): void {
    if (this.open && !this.silent()) this.ws.send(text);
  }

  deliver(text: string): Delivery {
    if (!this.open) return 'closed';
    const s = this.env.settings();
    const stats = this.env.stats();
    this.dataSerial += 1;
    const n = this.dataSerial;
    let outcome: Delivery;
    if (this.silent()) {
      stats.silencedMessages += 1;
      outcome = 'silenced';
    } else if (s.gapEvery !== undefined && n % s.gapEvery === 0) {
      stats.gapsInjected += 1;
      outcome = 'gap';
    } else if ((s.garbledRate ?? 0) > 0 && unitFloat('ws-garble', this.venue, this.serial, n, this.env.seed()) < (s.garbledRate ?? 0)) {
      if (unitFloat('ws-garble-kind', this.venue, this.serial, n, this.env.seed()) < 0.5) {
        // a frame of the right length whose bytes are not JSON: what a proxy mangling compression looks like
        this.ws.send(
          Buffer.from(text, 'utf8').map((b) => b ^ 0xa5),
          { binary: true },
        );
        stats.binaryFrames += 1;
        outcome = 'binary';
      } else {
        this.ws.send(text.slice(0, Math.max(1, Math.floor(text.length / 2))));
        stats.garbledFrames += 1;
        outcome = 'garbled';
      }
    } else {
      this.ws.send(text);
      stats.messagesSent += 1;
      outcome = 'sent';
    }
    if (s.disconnectEvery !== undefined && n % s.disconnectEvery === 0) {
      stats.disconnects += 1;
      // no close frame: the client learns from the dropped TCP connection, as after a venue restart
      this.ws.terminate();
    }
    return outcome;
  }
}

/** The text of an incoming frame (ws hands over a Buffer, a Buffer list or an ArrayBuffer). */
export function rawText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}
