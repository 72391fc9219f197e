/**
 * One upstream request about to be sent: what a venue adapter hands its `beforeRequest` hook and
 * what the budget gate spends. Declared here, not in venues or budget, so neither package needs
 * the other.
 */
export interface BeforeRequestInfo {
  venue: string;
  /** Name of the endpoint in the adapter's `weights` table, e.g. `klines`. */
  endpoint: string;
  /** Weight this request costs in the venue's budget. */
  weight: number;
  /**
   * The part of the venue with a limit of its own (Xetra: the market, `DETR`): the request is spent
   * from that scope's budget instead of the venue's. Absent for venues with one limit.
   */
  scope?: string;
  /** The abort signal the caller passed with the call that sends it: lets a caller tell whose request it is (the worker counts weight per unit by it). */
  signal?: AbortSignal;
}

/** What happened to one upstream request, answered or not: the `afterResponse` hook's argument. */
export interface AfterResponseInfo {
  venue: string;
  endpoint: string;
  /** HTTP status; 0 when no response arrived (timeout, refused or reset connection). */
  status: number;
  latencyMs: number;
  /** Weight the venue says this client has used in its current window (Binance `X-MBX-USED-WEIGHT-1M`). */
  usedWeight?: number;
  /** Start (epoch ms) of the venue window `usedWeight` refers to. */
  usedWeightWindowStartMs?: number;
}
