/**
 * The fleet overview's script, served by the dashboard as one module (assets/overview.js, built
 * from this file at start). It polls `api/status` every `refreshMs` and redraws one row per venue
 * and one per stream, and below the tables charts each venue's recent history from `api/history`
 * with uPlot. Requests are relative, so the page works under any mount path.
 */
import type { FleetHistory } from '../fleet-history.js';
import type { FleetStatus } from '../fleet-status.js';
import type { OverviewConfig } from '../internal/overview-page.js';
import { byId, dur, errorText } from './dom.js';
import { renderStatus } from './fleet-tables.js';
import { HistoryCharts } from './history-charts.js';

/** What the server put in the page (overview-page.ts). */
const CONFIG = JSON.parse(byId('overview-config').textContent ?? '') as OverviewConfig;
const charts = new HistoryCharts(byId('charts'));
let range = 15;

async function tick(): Promise<void> {
  try {
    const res = await fetch('api/status', { headers: { accept: 'application/json' }, credentials: 'same-origin' });
    if (!res.ok) throw new Error('GET api/status: HTTP ' + res.status);
    renderStatus((await res.json()) as FleetStatus, CONFIG.queuesPath);
    byId('error').textContent = '';
  } catch (err) {
    byId('error').textContent = errorText(err);
  } finally {
    setTimeout(tick, CONFIG.refreshMs);
  }
}

async function loadHistory(): Promise<void> {
  try {
    const res = await fetch('api/history?minutes=' + range, { headers: { accept: 'application/json' }, credentials: 'same-origin' });
    if (!res.ok) throw new Error('GET api/history: HTTP ' + res.status);
    charts.render((await res.json()) as FleetHistory);
  } catch (err) {
    byId('error').textContent = errorText(err);
  }
}

function historyTick(): void {
  void loadHistory().finally(() => setTimeout(historyTick, CONFIG.historyRefreshMs));
}

const rangeSelect = byId<HTMLSelectElement>('range');
rangeSelect.addEventListener('change', () => {
  range = Number(rangeSelect.value);
  void loadHistory();
});
byId('sample-every').textContent = dur(CONFIG.historyIntervalMs);
byId('every').textContent = dur(CONFIG.refreshMs);
byId<HTMLAnchorElement>('queues-link').href = CONFIG.queuesPath;
byId('mode').textContent = CONFIG.readOnly ? 'read-only' : 'job actions enabled';
void tick();
historyTick();
