import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { ConfigError } from '@tickfleet/core';

/** Credentials the dashboard accepts; from `TICKFLEET_DASHBOARD_TOKEN` or `_USER` + `_PASSWORD`. */
export interface DashboardCredentials {
  token?: string | undefined;
  user?: string | undefined;
  password?: string | undefined;
}

/** The cookie set after a valid `?token=`, so the bull-board UI's own API calls stay authenticated. */
export const TOKEN_COOKIE = 'tickfleet_dashboard_token';

/**
 * Checks the credential configuration at start: a user needs a password and vice versa, and job
 * actions need at least one way to authenticate (an open board that can retry or clean units is
 * never started by accident).
 */
export function assertCredentials(allowActions: boolean, creds: DashboardCredentials): void {
  if (creds.user !== undefined && creds.password === undefined) {
    throw new ConfigError('TICKFLEET_DASHBOARD_PASSWORD', 'a password when TICKFLEET_DASHBOARD_USER is set');
  }
  if (creds.password !== undefined && creds.user === undefined) {
    throw new ConfigError('TICKFLEET_DASHBOARD_USER', 'a user name when TICKFLEET_DASHBOARD_PASSWORD is set');
  }
  if (allowActions && !hasCredentials(creds)) {
    throw new ConfigError(
      'TICKFLEET_DASHBOARD_TOKEN',
      'a token (or TICKFLEET_DASHBOARD_USER and TICKFLEET_DASHBOARD_PASSWORD) when job actions are enabled with --allow-actions',
    );
  }
}

export function hasCredentials(creds: DashboardCredentials): boolean {
  return creds.token !== undefined || (creds.user !== undefined && creds.password !== undefined);
}

/** Constant-time string comparison (hashing first so lengths do not leak either). */
function same(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb);
}

function cookie(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k !== name) continue;
    // A malformed escape (`%zz`) is a wrong credential, not a server error.
    try {
      return decodeURIComponent(v.join('='));
    } catch {
      return undefined;
    }
  }
  return undefined;
}

export type AuthOutcome = { ok: true; via: 'token' | 'query-token' | 'cookie' | 'basic' } | { ok: false };

/** Whether a request carries valid credentials: bearer token, `?token=`, the token cookie, or basic auth. */
export function authenticate(req: IncomingMessage, creds: DashboardCredentials): AuthOutcome {
  const header = req.headers.authorization ?? '';
  if (creds.token !== undefined) {
    const bearer = /^Bearer\s+(.+)$/i.exec(header)?.[1];
    if (bearer !== undefined && same(bearer.trim(), creds.token)) return { ok: true, via: 'token' };
    const query = new URL(req.url ?? '/', 'http://dashboard').searchParams.get('token');
    if (query !== null && same(query, creds.token)) return { ok: true, via: 'query-token' };
    const c = cookie(req, TOKEN_COOKIE);
    if (c !== undefined && same(c, creds.token)) return { ok: true, via: 'cookie' };
  }
  if (creds.user !== undefined && creds.password !== undefined) {
    const basic = /^Basic\s+(.+)$/i.exec(header)?.[1];
    if (basic !== undefined) {
      const decoded = Buffer.from(basic.trim(), 'base64').toString('utf8');
      const i = decoded.indexOf(':');
      if (i >= 0 && same(decoded.slice(0, i), creds.user) && same(decoded.slice(i + 1), creds.password)) return { ok: true, via: 'basic' };
    }
  }
  return { ok: false };
}
