import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Logger } from '@tickfleet/telemetry';
import type { VenueQueues } from '@tickfleet/queues';
import type { StateStore } from '@tickfleet/store';
import type { RequestHandler } from 'express';
import { DASHBOARD_DEFAULTS } from './dashboard-defaults.js';

export interface QueueBoardOptions {
  queues: VenueQueues;
  store: StateStore;
  /** URL path the board is mounted at. @defaultValue {@link DASHBOARD_DEFAULTS.queuesPath} */
  basePath?: string;
  /** Refuse job actions (retry, promote, clean, …) in bull-board itself. @defaultValue not {@link DASHBOARD_DEFAULTS.allowActions} */
  readOnly?: boolean;
  /** How often connectors are re-read to find new venues. @defaultValue {@link DASHBOARD_DEFAULTS.discoverMs} */
  discoverMs?: number;
  logger?: Logger;
}

/**
 * bull-board over every venue queue. Venues come from the connectors in the store and are
 * re-read every `discoverMs`, so a venue added while the dashboard runs shows up without a
 * restart (bull-board's `addQueue`).
 */
export class QueueBoard {
  readonly basePath: string;
  private readonly adapter = new ExpressAdapter();
  private readonly board: ReturnType<typeof createBullBoard>;
  private readonly known = new Set<string>();
  private readonly readOnly: boolean;
  private readonly discoverMs: number;
  private timer: NodeJS.Timeout | undefined;
  private discovering: Promise<string[]> | undefined;

  constructor(private readonly options: QueueBoardOptions) {
    this.basePath = options.basePath ?? DASHBOARD_DEFAULTS.queuesPath;
    this.readOnly = options.readOnly ?? !DASHBOARD_DEFAULTS.allowActions;
    this.discoverMs = options.discoverMs ?? DASHBOARD_DEFAULTS.discoverMs;
    this.adapter.setBasePath(this.basePath);
    this.board = createBullBoard({
      queues: [],
      serverAdapter: this.adapter,
      options: { uiConfig: { boardTitle: 'tickfleet queues' } },
    });
  }

  /** The express router serving the board UI and its API. */
  get router(): RequestHandler {
    return this.adapter.getRouter() as RequestHandler;
  }

  /** Venues on the board, sorted. */
  venues(): string[] {
    return [...this.known].sort();
  }

  /** bull-board's name of a venue's queue (the BullMQ queue name, e.g. `{binance}`). */
  queueName(venue: string): string {
    return this.options.queues.queue(venue).name;
  }

  /** Reads the connectors and adds a board entry for each venue not on the board yet; returns the new ones. */
  discover(): Promise<string[]> {
    // Coalesce: a timer tick and an explicit call must not add one venue twice.
    this.discovering ??= this.discoverOnce().finally(() => {
      this.discovering = undefined;
    });
    return this.discovering;
  }

  private async discoverOnce(): Promise<string[]> {
    const connectors = await this.options.store.connectors.list();
    const added: string[] = [];
    for (const c of connectors) {
      if (this.known.has(c.venue)) continue;
      this.board.addQueue(
        new BullMQAdapter(this.options.queues.queue(c.venue), {
          readOnlyMode: this.readOnly,
          allowRetries: !this.readOnly,
          displayName: c.venue,
          description: `${c.venue} units (${c.status}, cap ${c.maxInflight})`,
        }),
      );
      this.known.add(c.venue);
      added.push(c.venue);
    }
    if (added.length > 0) this.options.logger?.info({ venues: added }, 'queues added to the board');
    return added;
  }

  /** Discovers now, then every `discoverMs`. */
  async start(): Promise<void> {
    await this.discover();
    this.timer = setInterval(() => {
      this.discover().catch((err: unknown) => this.options.logger?.warn({ err }, 'queue discovery failed'));
    }, this.discoverMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.discovering?.catch(() => undefined);
  }
}
