import { ConfigError, systemClock, type Clock } from '@tickfleet/core';
import type { z } from 'zod';
import { normaliseBaseUrl } from './internal/options.js';
import { parsePayload } from './internal/parse-payload.js';
import type { FetchOptions, VenueAdapter, VenueAdapterOptions } from './types.js';
import { VenueHttpClient, type HttpRequest, type HttpResponse, type VenueHttpClientOptions } from './venue-http-client.js';
import { VenueRejectedError } from './venue-rejected-error.js';

/**
 * How a venue counts and refuses requests: where its answers report the used weight
 * (`usedWeightHeader`, or `readUsage` for other headers) and how its 429 and 418 become retry times.
 */
export type VenueLimits = Pick<VenueHttpClientOptions, 'usedWeightHeader' | 'usedWeightWindowMs' | 'readUsage' | 'errorPolicy'>;

/** A credential an adapter needs before its first request (not at construction: every venue's adapter is built). */
export interface VenueCredential {
  value: string | undefined;
  /** The adapter option that carries it. */
  option: string;
  /** The variable the worker takes it from; the ConfigError names it. */
  env: string;
  /** What it is, for the error: `a FRED API key`. */
  what: string;
}

/** What an adapter declares about its venue; its endpoints are its own methods. */
export type VenueSpec<E extends string, C extends string> = {
  venue: string;
  /** Declared weight per endpoint name, as the venue counts it. */
  weights: Readonly<Record<E, number>>;
  limits: VenueLimits;
} & ([C] extends [never] ? { credentials?: undefined } : { credentials: Readonly<Record<C, VenueCredential>> });

/** One request of an adapter. */
interface RequestOptions extends FetchOptions {
  /** Extra request headers (credentials of venues that take them in headers); never logged. */
  headers?: Record<string, string>;
  /** The part of the venue with a limit of its own (Xetra's market), handed to `beforeRequest`. */
  scope?: string;
  /** The adapter's own error for a refusal (FRED's unknown series, Polygon's plan); returning `err` keeps it. */
  rejected?: (err: VenueRejectedError) => Error;
}

/**
 * What every HTTP venue adapter repeated, held once: the checked `baseUrl`, the clock, one
 * VenueHttpClient carrying the caller's hooks and timeout and the venue's limits, the frozen
 * weights, identity symbol mapping, credentials checked before use, and requests by endpoint name
 * (weight looked up, JSON validated, refusals mapped). A subclass is its endpoints, schemas and
 * weights: `E` names its endpoints, `C` its credentials. An adapter whose requests are made by a
 * library (a CCXT exchange) routes them through `get` too, so budget hooks and errors stay the same.
 */
export abstract class HttpVenueAdapter<E extends string, C extends string = never> implements VenueAdapter {
  readonly venue: string;
  readonly weights: Readonly<Record<E, number>>;
  protected readonly baseUrl: string;
  protected readonly clock: Clock;
  private readonly http: VenueHttpClient;
  private readonly credentials: Readonly<Record<C, VenueCredential>>;

  protected constructor(options: VenueAdapterOptions, spec: VenueSpec<E, C>) {
    this.venue = spec.venue;
    this.weights = Object.freeze({ ...spec.weights });
    this.baseUrl = normaliseBaseUrl('baseUrl', options.baseUrl);
    this.clock = options.clock ?? systemClock;
    // Absent only when C is never: no name can be asked for.
    this.credentials = spec.credentials ?? ({} as Readonly<Record<C, VenueCredential>>);
    this.http = new VenueHttpClient({
      venue: this.venue,
      ...(options.hooks ? { hooks: options.hooks } : {}),
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
      clock: this.clock,
      ...spec.limits,
    });
  }

  /** Identity, for venues whose symbols are already in tickfleet form. */
  toVenueSymbol(symbol: string): string {
    return symbol;
  }

  fromVenueSymbol(venueSymbol: string): string {
    return venueSymbol;
  }

  /** `${baseUrl}${path}`, and `?query` when given. */
  protected url(path: string, query?: Record<string, string> | URLSearchParams): string {
    return query === undefined ? `${this.baseUrl}${path}` : `${this.baseUrl}${path}?${new URLSearchParams(query).toString()}`;
  }

  /** One GET of `endpoint` at its declared weight; a refusal leaves as `options.rejected` maps it. */
  protected async get(endpoint: E, url: string, options: RequestOptions = {}): Promise<HttpResponse> {
    try {
      return await this.send({ endpoint, weight: this.weights[endpoint], url, signal: options.signal, headers: options.headers, scope: options.scope });
    } catch (err) {
      if (options.rejected && err instanceof VenueRejectedError) throw options.rejected(err);
      throw err;
    }
  }

  /** One POST of `body` (as JSON) to `endpoint` at `weight` (its declared one by default), the answer validated by `schema`. */
  protected async postJson<S extends z.ZodType>(
    endpoint: E,
    url: string,
    body: unknown,
    schema: S,
    options: RequestOptions & { weight?: number; conforms?: (value: unknown) => value is z.infer<S> } = {},
  ): Promise<{ data: z.infer<S>; res: HttpResponse }> {
    let res: HttpResponse;
    try {
      res = await this.send({
        endpoint,
        weight: options.weight ?? this.weights[endpoint],
        url,
        signal: options.signal,
        headers: options.headers,
        scope: options.scope,
        jsonBody: JSON.stringify(body),
      });
    } catch (err) {
      if (options.rejected && err instanceof VenueRejectedError) throw options.rejected(err);
      throw err;
    }
    return { data: parsePayload(this.venue, endpoint, res.body, schema, options.conforms), res };
  }

  /** `get`, then the body as JSON validated by `schema` (`conforms`: see parsePayload). */
  protected async getJson<S extends z.ZodType>(
    endpoint: E,
    url: string,
    schema: S,
    options: RequestOptions & { conforms?: (value: unknown) => value is z.infer<S> } = {},
  ): Promise<{ data: z.infer<S>; res: HttpResponse }> {
    const res = await this.get(endpoint, url, options);
    return { data: parsePayload(this.venue, endpoint, res.body, schema, options.conforms), res };
  }

  /** Every request of the adapter passes here: a venue that paces or retries its requests overrides it. */
  protected send(req: HttpRequest): Promise<HttpResponse> {
    return this.http.get(req);
  }

  /** The credential's value, or a ConfigError naming the variable the worker takes it from. */
  protected credential(name: C): string {
    const { value, option, env, what } = this.credentials[name];
    if (value) return value;
    throw new ConfigError(env, `${what} (the adapter option ${option}, which the worker takes from ${env})`);
  }
}
