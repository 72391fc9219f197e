import type { FleetStatus, VenueStatus } from '../fleet-status.js';
import type { StreamStatus } from '../stream-status.js';
import type { BookLoopStatus } from '../book-loop-status.js';
import { byId, bytes, clock, dur, el, num, type Child } from './dom.js';

// Mirrors queueNameFor() of @tickfleet/queues: the BullMQ queue of a venue is "{venue}".
function queueHref(queuesPath: string, venue: string): string {
  return queuesPath + '/queue/' + encodeURIComponent('{' + venue + '}');
}

/** `waiting 3 · prio 0 · …`: each count in a span named by its field. */
function counts(q: VenueStatus['queue'], parts: readonly (readonly [label: string, field: keyof VenueStatus['queue']])[]): Child[] {
  return parts.flatMap(([label, field], i) => [(i ? ' · ' : '') + label + ' ', el('span', { 'data-field': field }, [String(q[field])])]);
}

/** A job id that may break after its `:` separators when the column is narrow (the text stays the same). */
function breakable(id: string): Child[] {
  return id.split(':').flatMap((part, i) => (i ? [':', el('wbr'), part] : [part]));
}

/** The page's tone of each health state: the pill colours the status column already has (overview.css). */
const HEALTH_TONE: Record<VenueStatus['health']['state'], string> = {
  healthy: 'active',
  degraded: 'paused',
  failing: 'frozen',
  frozen: 'frozen',
  paused: 'paused',
  disabled: 'disabled',
  idle: 'disabled',
};

/** Under the status pill: the health state's pill (the reason and last error's message on hover), then the last error's cause and age. */
function healthLines(v: VenueStatus, now: number): HTMLElement[] {
  const h = v.health;
  const e = h.lastError;
  const title = h.reason + (e ? '\nlast error ' + new Date(e.atMs).toISOString() + ': ' + e.message : '');
  return [
    el('small', { 'data-field': 'health-line', title }, [el('span', { class: 'pill ' + HEALTH_TONE[h.state], 'data-field': 'health' }, [h.state])]),
    el('small', { 'data-field': 'last-error', title }, [e ? e.cause + ' ' + dur(Math.max(0, now - e.atMs)) + ' ago' : '']),
  ];
}

function venueRow(v: VenueStatus, now: number, queuesPath: string): HTMLTableRowElement {
  const b = v.budget;
  const budget = b
    ? [
        el('span', { 'data-field': 'budget-used' }, [String(Math.round(b.used))]),
        ' / ',
        el('span', { 'data-field': 'budget-limit' }, [String(b.limit)]),
        el('div', { class: 'bar' + (b.remaining <= 0 ? ' full' : '') }, [
          el('span', { style: 'width:' + Math.min(100, (100 * b.used) / Math.max(1, b.limit)).toFixed(1) + '%' }),
        ]),
        el('small', {}, [b.policy + ', resets in ' + dur(Math.max(0, b.resetAtMs - now))]),
      ]
    : ['-'];
  const f = v.freeze;
  const freeze = f
    ? [
        el('span', { class: 'pill frozen', 'data-field': 'freeze-cause' }, [f.cause]),
        el('small', { 'data-field': 'freeze-remaining' }, [dur(f.remainingMs) + ' left']),
      ]
    : [el('span', { class: 'dim', 'data-field': 'freeze-cause' }, ['none'])];
  const q = v.queue;
  const lag = v.cursorLag;
  return el('tr', { 'data-venue': v.venue }, [
    el('td', {}, [el('a', { class: 'q', href: queueHref(queuesPath, v.venue), 'data-field': 'venue' }, [v.venue])]),
    el('td', {}, [el('span', { class: 'pill ' + v.status, 'data-field': 'status' }, [v.status]), ...healthLines(v, now)]),
    el('td', { 'data-field': 'budget' }, budget),
    el('td', { 'data-field': 'freeze' }, freeze),
    el('td', { 'data-field': 'concurrency' }, [
      v.concurrency.current + ' / ' + v.maxInflight,
      el('small', {}, ['AIMD ' + v.concurrency.min + '..' + v.concurrency.max + (v.globalConcurrency === null ? '' : ', queue ' + v.globalConcurrency)]),
    ]),
    el('td', { 'data-field': 'queue' }, [
      el(
        'span',
        {},
        counts(q, [
          ['waiting', 'waiting'],
          ['prio', 'prioritized'],
          ['active', 'active'],
        ]),
      ),
      el(
        'small',
        {},
        counts(q, [
          ['delayed', 'delayed'],
          ['failed', 'failed'],
          ['done', 'completed'],
        ]),
      ),
    ]),
    el('td', {}, [el('span', { 'data-field': 'runnable' }, [String(v.runnable)]), ' / ', el('span', { 'data-field': 'blocked' }, [String(v.blocked)])]),
    el('td', { 'data-field': 'lag' }, [
      dur(lag.maxMs),
      el('small', {}, lag.jobId ? breakable(lag.jobId) : [lag.jobs + ' ohlcv jobs' + (lag.withoutCursor ? ', ' + lag.withoutCursor + ' without cursor' : '')]),
    ]),
    el('td', { 'data-field': 'gaps' }, [String(v.openGaps)]),
    el('td', {}, [
      el('span', { 'data-field': 'jobs' }, [v.activeJobsCount + ' / ' + v.jobsCount]),
      el('small', { 'data-field': 'last-job-run' }, [v.lastJobRunAt === null ? 'never ran' : 'ran ' + dur(Math.max(0, now - v.lastJobRunAt)) + ' ago']),
    ]),
    el('td', { 'data-field': 'workers' }, [v.liveWorkers === null ? '-' : String(v.liveWorkers)]),
  ]);
}

// One stream: its definition, the lease holder and what the holder last published. Unheld and
// unpublished streams still get a row, so a stream nobody runs is visible too.
function streamRow(st: StreamStatus, now: number): HTMLTableRowElement {
  const l = st.live;
  const h = st.holder;
  const state = l ? l.state : h ? 'connecting' : 'unheld';
  const ledger =
    st.unhealedGaps === 0
      ? [el('span', { class: 'dim', 'data-field': 'ledger-count' }, ['0'])]
      : [
          el('details', { class: 'ledger' }, [
            el('summary', {}, [el('span', { class: 'bad', 'data-field': 'ledger-count' }, [String(st.unhealedGaps)]), ' unhealed']),
            // Newest first; the ledger job id (for tickfleet gaps list) in each entry's tooltip.
            el('ul', {}, [
              ...st.gaps.map((g) => el('li', { 'data-field': 'ledger-entry', title: g.jobId }, [g.symbol + ' trade ids ' + g.fromId + '..' + (g.toId - 1)])),
              ...(st.unhealedGaps > st.gaps.length ? [el('li', {}, ['and ' + (st.unhealedGaps - st.gaps.length) + ' older'])] : []),
            ]),
          ]),
        ];
  // Secondary figures go on a dim line under the main one (venue under the name, reconnects under
  // the messages, resyncs under the gaps), so the table fits a laptop's width.
  return el('tr', { 'data-stream': st.name }, [
    el('td', {}, [el('span', { 'data-field': 'name' }, [st.name]), el('small', { 'data-field': 'venue' }, [st.venue])]),
    el('td', {}, [el('span', { 'data-field': 'symbols' }, [String(st.symbolCount)]), el('small', { 'data-field': 'channels' }, [st.channels.join(', ')])]),
    el('td', { 'data-field': 'enabled' }, [st.enabled ? 'yes' : 'no']),
    el('td', {}, [el('span', { 'data-field': 'holder' }, [h ? h.worker : '-']), el('small', {}, [h ? 'token ' + h.token : 'no lease'])]),
    el('td', {}, [
      el('span', { class: 'pill ' + state, 'data-field': 'state' }, [state]),
      el('small', { 'data-field': 'connected-since' }, [l && l.connectedSince ? 'since ' + l.connectedSince.slice(11, 19) + 'Z' : '']),
    ]),
    el('td', {}, [
      el('span', { 'data-field': 'messages' }, [num(l?.messages)]),
      el('small', {}, l ? [el('span', { 'data-field': 'reconnects' }, [String(l.reconnects)]), ' reconnects'] : []),
    ]),
    el('td', {}, [
      el('span', { 'data-field': 'gaps' }, [
        l ? l.gapsFound + ' / ' + l.gapsHealed + ' / ' : '- / - / ',
        el('span', { class: l && l.gapsUnhealed > 0 ? 'bad' : '', 'data-field': 'gaps-unhealed' }, [num(l?.gapsUnhealed)]),
      ]),
      el('small', {}, l ? [el('span', { 'data-field': 'resyncs' }, [String(l.resyncs)]), ' resyncs'] : []),
    ]),
    // The age the holder saw when it published, and how old that publication is by this snapshot.
    el('td', {}, [
      el('span', { 'data-field': 'last-message' }, [l ? dur(l.lastMessageAgeMs) + (l.lastMessageAgeMs === null ? '' : ' ago') : '-']),
      el('small', {}, [l ? 'published ' + dur(Math.max(0, now - l.updatedAt)) + ' ago' : '']),
    ]),
    el('td', { 'data-field': 'skew' }, [
      l ? dur(l.timeQuality.skewP50Ms) + ' / ' + dur(l.timeQuality.skewP99Ms) : '-',
      el('small', {}, [l ? l.timeQuality.outOfOrder + ' out of order' : '']),
    ]),
    el('td', { 'data-field': 'ledger' }, ledger),
  ]);
}

function tbodyOf(tableId: string): HTMLTableSectionElement {
  const tbody = byId<HTMLTableElement>(tableId).tBodies[0];
  if (!tbody) throw new Error(`overview page: table #${tableId} has no tbody`);
  return tbody;
}

function renderStreams(s: FleetStatus): void {
  const list = s.streams ?? [];
  const tbody = tbodyOf('streams');
  tbody.replaceChildren(...list.map((st) => streamRow(st, s.atMs)));
  if (list.length === 0) tbody.append(el('tr', {}, [el('td', { colspan: '10', class: 'dim' }, ['no streams defined (tickfleet streams add)'])]));
  byId('t-streams').textContent = list.filter((st) => st.holder).length + ' / ' + list.length;
}

// One row per holder of a venue's book loop, and one for the venue as a whole (unheld shares, sums).
function bookLoopRows(l: BookLoopStatus): HTMLTableRowElement[] {
  const ms = (v: number | null | undefined): string => (v === null || v === undefined ? '-' : Math.round(v) + ' ms');
  const rows = l.holders.map((h) => {
    const r = h.report;
    const per = (x: number | undefined): string => (r && r.intervalMs > 0 && x !== undefined ? ((x * 1000) / r.intervalMs).toFixed(1) : '-');
    return el('tr', { 'data-book-loop': l.venue, 'data-holder': h.workerId }, [
      el('td', {}, [el('span', {}, [l.venue]), el('small', {}, ['every ' + dur(l.cadenceMs)])]),
      el('td', { 'data-field': 'holder' }, [h.workerId]),
      el('td', {}, [
        el('span', { 'data-field': 'shares' }, [h.shares.join(', ') + ' of ' + l.shares]),
        el('small', {}, [num(r?.instruments) + ' instruments']),
      ]),
      el('td', { 'data-field': 'age' }, [ms(r?.p50AgeMs) + ' / ' + ms(r?.p95AgeMs)]),
      el('td', {}, [el('span', { 'data-field': 'books' }, [per(r?.books)]), el('small', {}, [per(r?.unchanged) + ' unchanged'])]),
      el('td', {}, [el('span', { 'data-field': 'requests' }, [per(r?.requests)]), el('small', {}, [per(r?.weight) + ' budget'])]),
    ]);
  });
  rows.push(
    el('tr', { 'data-book-loop': l.venue, 'data-holder': '' }, [
      el('td', {}, [el('span', {}, [l.venue]), el('small', {}, ['all holders'])]),
      el('td', { class: l.unheld.length > 0 ? 'bad' : 'dim' }, [l.unheld.length > 0 ? 'unheld: ' + l.unheld.join(', ') : 'every share held']),
      el('td', {}, [String(l.shares - l.unheld.length) + ' of ' + l.shares]),
      el('td', { 'data-field': 'age' }, [ms(l.p50AgeMs) + ' / ' + ms(l.p95AgeMs)]),
      el('td', {}, [el('span', {}, [l.booksPerS.toFixed(1)]), el('small', {}, [l.unchangedPerS.toFixed(1) + ' unchanged'])]),
      el('td', {}, [el('span', {}, [l.requestsPerS.toFixed(1)]), el('small', {}, [l.weightPerS.toFixed(1) + ' budget'])]),
    ]),
  );
  return rows;
}

function renderBookLoops(s: FleetStatus): void {
  const list = s.bookLoops ?? [];
  const tbody = tbodyOf('book-loops');
  tbody.replaceChildren(...list.flatMap(bookLoopRows));
  if (list.length === 0)
    tbody.append(el('tr', {}, [el('td', { colspan: '6', class: 'dim' }, ['no book loop (tickfleet connectors upsert <venue> --book-loop 1s)'])]));
}

/** Redraws the cards, the venue table and the stream table from one `api/status` snapshot. */
export function renderStatus(s: FleetStatus, queuesPath: string): void {
  const tbody = tbodyOf('venues');
  tbody.replaceChildren(...s.venues.map((v) => venueRow(v, s.atMs, queuesPath)));
  if (s.venues.length === 0) tbody.append(el('tr', {}, [el('td', { colspan: '10', class: 'dim' }, ['no connectors in the store yet'])]));
  byId('t-venues').textContent = String(s.venues.length);
  byId('t-runnable').textContent = String(s.totals.runnable);
  byId('t-blocked').textContent = String(s.totals.blocked);
  byId('t-active').textContent = String(s.totals.active);
  byId('t-failed').textContent = String(s.totals.failed);
  byId('t-frozen').textContent = String(s.totals.frozenVenues);
  byId('t-gaps').textContent = String(s.totals.openGaps);
  byId('t-spool').textContent = s.spool ? s.spool.segments + ' seg · ' + bytes(s.spool.bytes) : 'n/a';
  renderStreams(s);
  renderBookLoops(s);
  byId('updated').textContent = clock(s.atMs);
}
