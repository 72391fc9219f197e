/**
 * The fleet overview: one static HTML page with a small inline script that polls
 * `api/status` (relative, so the page works under any mount path) every `refreshMs` and
 * redraws one row per venue and one per stream, and below the tables charts each venue's recent history from
 * `api/history` with uPlot, which the dashboard serves itself under `assets/`. No build step,
 * nothing from another origin.
 */
export function overviewPage(options: { queuesPath: string; refreshMs: number; historyIntervalMs: number; readOnly: boolean }): string {
  const config = JSON.stringify({
    queuesPath: options.queuesPath,
    refreshMs: options.refreshMs,
    // Redrawing more often than the history gains a sample would only repeat the same picture.
    historyRefreshMs: Math.max(1000, options.historyIntervalMs),
    historyIntervalMs: options.historyIntervalMs,
    readOnly: options.readOnly,
  });
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tickfleet · fleet overview</title>
<link rel="stylesheet" href="assets/uplot.min.css">
<style>
  :root { --bg:#0f1419; --panel:#171d24; --line:#26303b; --text:#d8dee6; --dim:#8a96a3; --ok:#3fb950; --warn:#d29922; --bad:#f85149; --accent:#58a6ff; }
  * { box-sizing: border-box; }
  body { margin:0; font:14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background:var(--bg); color:var(--text); }
  header { display:flex; align-items:baseline; gap:24px; padding:16px 24px; border-bottom:1px solid var(--line); background:var(--panel); }
  header h1 { font-size:18px; margin:0; }
  header a { color:var(--accent); }
  .meta { color:var(--dim); }
  .cards { display:flex; gap:12px; padding:16px 24px 0; flex-wrap:wrap; }
  .card { background:var(--panel); border:1px solid var(--line); border-radius:6px; padding:10px 14px; min-width:140px; }
  .card .k { color:var(--dim); font-size:12px; text-transform:uppercase; letter-spacing:.04em; }
  .card .v { font-size:20px; font-variant-numeric:tabular-nums; }
  main { padding:16px 24px; overflow-x:auto; }
  table { border-collapse:collapse; width:100%; font-variant-numeric:tabular-nums; }
  th, td { text-align:left; padding:8px 10px; border-bottom:1px solid var(--line); white-space:nowrap; vertical-align:top; }
  th { color:var(--dim); font-weight:600; font-size:12px; text-transform:uppercase; letter-spacing:.04em; }
  td small { color:var(--dim); display:block; }
  .pill { display:inline-block; padding:1px 8px; border-radius:10px; font-size:12px; font-weight:600; }
  .active { background:rgba(63,185,80,.15); color:var(--ok); }
  .paused { background:rgba(210,153,34,.15); color:var(--warn); }
  .disabled { background:rgba(138,150,163,.15); color:var(--dim); }
  .frozen { background:rgba(248,81,73,.15); color:var(--bad); }
  .live { background:rgba(63,185,80,.15); color:var(--ok); }
  .connecting, .resyncing, .backoff, .unheld { background:rgba(210,153,34,.15); color:var(--warn); }
  .stopped { background:rgba(138,150,163,.15); color:var(--dim); }
  .bad { color:var(--bad); }
  #streams-section h2 { font-size:16px; margin:16px 0 8px; }
  details.ledger summary { cursor:pointer; }
  details.ledger ul { margin:4px 0 0; padding-left:16px; color:var(--dim); font-size:12px; }
  .bar { width:120px; height:6px; background:var(--line); border-radius:3px; margin-top:4px; }
  .bar > span { display:block; height:100%; border-radius:3px; background:var(--accent); }
  .bar.full > span { background:var(--bad); }
  .dim { color:var(--dim); }
  a.q { color:var(--accent); text-decoration:none; }
  #error { color:var(--bad); padding:0 24px; }
  #history { padding:0 24px 24px; }
  #history .head { display:flex; align-items:baseline; gap:16px; flex-wrap:wrap; }
  #history h2 { font-size:16px; margin:8px 0; }
  #history select { background:var(--panel); color:var(--text); border:1px solid var(--line); border-radius:4px; padding:2px 6px; }
  .swatch { display:inline-block; width:10px; height:10px; border-radius:2px; margin:0 4px 0 10px; vertical-align:-1px; }
  .venue-charts { background:var(--panel); border:1px solid var(--line); border-radius:6px; padding:10px 14px; margin-top:12px; }
  .venue-charts h3 { margin:0 0 6px; font-size:14px; }
  .venue-charts .marks { margin:0 0 6px; padding:0; list-style:none; color:var(--dim); font-size:12px; }
  .venue-charts .charts { display:flex; gap:10px; flex-wrap:wrap; }
  .venue-charts .chart .title { color:var(--dim); font-size:12px; }
  .uplot { font-family:inherit; }
  .venue-charts .chart .title .swatch { width:8px; height:3px; margin:0 3px 0 10px; vertical-align:3px; }
</style>
</head>
<body>
<header>
  <h1>tickfleet fleet overview</h1>
  <span class="meta">updated <span id="updated">never</span> · refreshes every <span id="every"></span></span>
  <a id="queues-link" href="#">queues (bull-board)</a>
  <span class="meta" id="mode"></span>
</header>
<div class="cards">
  <div class="card"><div class="k">venues</div><div class="v" id="t-venues">-</div></div>
  <div class="card"><div class="k">runnable units</div><div class="v" id="t-runnable">-</div></div>
  <div class="card"><div class="k">blocked units</div><div class="v" id="t-blocked">-</div></div>
  <div class="card"><div class="k">active</div><div class="v" id="t-active">-</div></div>
  <div class="card"><div class="k">failed</div><div class="v" id="t-failed">-</div></div>
  <div class="card"><div class="k">frozen venues</div><div class="v" id="t-frozen">-</div></div>
  <div class="card"><div class="k">open gaps</div><div class="v" id="t-gaps">-</div></div>
  <div class="card"><div class="k">spool depth</div><div class="v" id="t-spool">-</div></div>
  <div class="card"><div class="k">streams held</div><div class="v" id="t-streams">-</div></div>
</div>
<p id="error"></p>
<main>
<table id="venues">
  <thead><tr>
    <th>venue</th><th>status</th><th>budget (window)</th><th>freeze</th><th>AIMD conc / cap</th>
    <th>queue depth</th><th>runnable / blocked</th>
    <th>oldest cursor lag</th><th>open gaps</th><th>live workers</th>
  </tr></thead>
  <tbody></tbody>
</table>
<section id="streams-section">
<h2>streams</h2>
<table id="streams">
  <thead><tr>
    <th>stream</th><th>venue</th><th>symbols</th><th>enabled</th><th>holder</th><th>state</th>
    <th>messages</th><th>reconnects</th><th title="sequence or trade-id gaps found / healed / left unhealed">gaps f / h / u</th><th>resyncs</th>
    <th>last message</th><th>skew p50 / p99</th><th>gap ledger</th>
  </tr></thead>
  <tbody></tbody>
</table>
</section>
</main>
<section id="history">
  <div class="head">
    <h2>last <select id="range" aria-label="history range"><option value="15">15 min</option><option value="30">30 min</option><option value="60">60 min</option></select></h2>
    <span class="meta">sampled by the dashboard every <span id="sample-every"></span> · freezes:
      <span class="swatch" style="background:rgba(210,153,34,.5)"></span>429
      <span class="swatch" style="background:rgba(248,81,73,.5)"></span>418 ban
      <span class="swatch" style="background:rgba(88,166,255,.4)"></span>budget
      <span class="swatch" style="background:rgba(138,150,163,.5)"></span>manual</span>
  </div>
  <div id="charts"></div>
</section>
<script src="assets/uplot.iife.min.js"></script>
<script>
const CONFIG = ${config};
const $ = (id) => document.getElementById(id);
function dur(ms) {
  if (ms === null || ms === undefined) return '-';
  if (ms < 1000) return Math.round(ms) + 'ms';
  let s = Math.round(ms / 1000);
  const d = Math.floor(s / 86400); s -= d * 86400;
  const h = Math.floor(s / 3600); s -= h * 3600;
  const m = Math.floor(s / 60); s -= m * 60;
  return (d ? d + 'd' : '') + (h ? h + 'h' : '') + (m ? m + 'm' : '') + (s || !(d || h || m) ? s + 's' : '');
}
function bytes(n) {
  if (n < 1024) return n + ' B';
  if (n < 1048576) return (n / 1024).toFixed(1) + ' KiB';
  if (n < 1073741824) return (n / 1048576).toFixed(1) + ' MiB';
  return (n / 1073741824).toFixed(2) + ' GiB';
}
function el(tag, attrs, children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const c of children || []) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}
// Mirrors queueNameFor() of @tickfleet/queues: the BullMQ queue of a venue is "{venue}".
function queueHref(venue) { return CONFIG.queuesPath + '/queue/' + encodeURIComponent('{' + venue + '}'); }
function row(v, now) {
  const b = v.budget;
  const budget = b
    ? [el('span', { 'data-field': 'budget-used' }, [String(Math.round(b.used))]), ' / ', el('span', { 'data-field': 'budget-limit' }, [String(b.limit)]),
       el('div', { class: 'bar' + (b.remaining <= 0 ? ' full' : '') }, [el('span', { style: 'width:' + Math.min(100, (100 * b.used) / Math.max(1, b.limit)).toFixed(1) + '%' })]),
       el('small', {}, [b.policy + ', resets in ' + dur(Math.max(0, b.resetAtMs - now))])]
    : ['-'];
  const f = v.freeze;
  const freeze = f
    ? [el('span', { class: 'pill frozen', 'data-field': 'freeze-cause' }, [f.cause]), el('small', { 'data-field': 'freeze-remaining' }, [dur(f.remainingMs) + ' left'])]
    : [el('span', { class: 'dim', 'data-field': 'freeze-cause' }, ['none'])];
  const q = v.queue;
  const lag = v.cursorLag;
  return el('tr', { 'data-venue': v.venue }, [
    el('td', {}, [el('a', { class: 'q', href: queueHref(v.venue), 'data-field': 'venue' }, [v.venue])]),
    el('td', {}, [el('span', { class: 'pill ' + v.status, 'data-field': 'status' }, [v.status])]),
    el('td', { 'data-field': 'budget' }, budget),
    el('td', { 'data-field': 'freeze' }, freeze),
    el('td', { 'data-field': 'concurrency' }, [v.concurrency.current + ' / ' + v.maxInflight,
      el('small', {}, ['AIMD ' + v.concurrency.min + '..' + v.concurrency.max + (v.globalConcurrency === null ? '' : ', queue ' + v.globalConcurrency)])]),
    el('td', { 'data-field': 'queue' }, [
      el('span', {}, ['waiting ', el('span', { 'data-field': 'waiting' }, [String(q.waiting)]), ' · prio ', el('span', { 'data-field': 'prioritized' }, [String(q.prioritized)]),
        ' · active ', el('span', { 'data-field': 'active' }, [String(q.active)])]),
      el('small', {}, ['delayed ', el('span', { 'data-field': 'delayed' }, [String(q.delayed)]), ' · failed ', el('span', { 'data-field': 'failed' }, [String(q.failed)]),
        ' · done ', el('span', { 'data-field': 'completed' }, [String(q.completed)])])]),
    el('td', {}, [el('span', { 'data-field': 'runnable' }, [String(v.runnable)]), ' / ', el('span', { 'data-field': 'blocked' }, [String(v.blocked)])]),
    el('td', { 'data-field': 'lag' }, [dur(lag.maxMs), el('small', {}, [lag.jobId ? lag.jobId : lag.jobs + ' ohlcv jobs' + (lag.withoutCursor ? ', ' + lag.withoutCursor + ' without cursor' : '')])]),
    el('td', { 'data-field': 'gaps' }, [String(v.openGaps)]),
    el('td', { 'data-field': 'workers' }, [v.liveWorkers === null ? '-' : String(v.liveWorkers)]),
  ]);
}
function num(v) { return v === null || v === undefined ? '-' : String(v); }
// One stream: its definition, the lease holder and what the holder last published. Unheld and
// unpublished streams still get a row, so a stream nobody runs is visible too.
function streamRow(st, now) {
  const l = st.live;
  const h = st.holder;
  const state = l ? l.state : h ? 'connecting' : 'unheld';
  const ledger = st.unhealedGaps === 0
    ? [el('span', { class: 'dim', 'data-field': 'ledger-count' }, ['0'])]
    : [el('details', { class: 'ledger' }, [
        el('summary', {}, [el('span', { class: 'bad', 'data-field': 'ledger-count' }, [String(st.unhealedGaps)]), ' unhealed']),
        // Newest first; the ledger job id (for tickfleet gaps list) in each entry's tooltip.
        el('ul', {}, [...st.gaps.map((g) => el('li', { 'data-field': 'ledger-entry', title: g.jobId }, [g.symbol + ' trade ids ' + g.fromId + '..' + (g.toId - 1)])),
          ...(st.unhealedGaps > st.gaps.length ? [el('li', {}, ['and ' + (st.unhealedGaps - st.gaps.length) + ' older'])] : [])])])];
  return el('tr', { 'data-stream': st.name }, [
    el('td', { 'data-field': 'name' }, [st.name]),
    el('td', { 'data-field': 'venue' }, [st.venue]),
    el('td', {}, [el('span', { 'data-field': 'symbols' }, [String(st.symbolCount)]), el('small', { 'data-field': 'channels' }, [st.channels.join(', ')])]),
    el('td', { 'data-field': 'enabled' }, [st.enabled ? 'yes' : 'no']),
    el('td', {}, [el('span', { 'data-field': 'holder' }, [h ? h.worker : '-']), el('small', {}, [h ? 'token ' + h.token : 'no lease'])]),
    el('td', {}, [el('span', { class: 'pill ' + state, 'data-field': 'state' }, [state]),
      el('small', { 'data-field': 'connected-since' }, [l && l.connectedSince ? 'since ' + l.connectedSince.slice(11, 19) + 'Z' : ''])]),
    el('td', { 'data-field': 'messages' }, [num(l && l.messages)]),
    el('td', { 'data-field': 'reconnects' }, [num(l && l.reconnects)]),
    el('td', { 'data-field': 'gaps' }, [l ? l.gapsFound + ' / ' + l.gapsHealed + ' / ' : '- / - / ',
      el('span', { class: l && l.gapsUnhealed > 0 ? 'bad' : '', 'data-field': 'gaps-unhealed' }, [num(l && l.gapsUnhealed)])]),
    el('td', { 'data-field': 'resyncs' }, [num(l && l.resyncs)]),
    // The age the holder saw when it published, and how old that publication is by this snapshot.
    el('td', {}, [el('span', { 'data-field': 'last-message' }, [l ? dur(l.lastMessageAgeMs) + (l.lastMessageAgeMs === null ? '' : ' ago') : '-']),
      el('small', {}, [l ? 'published ' + dur(Math.max(0, now - l.updatedAt)) + ' ago' : ''])]),
    el('td', { 'data-field': 'skew' }, [l ? dur(l.timeQuality.skewP50Ms) + ' / ' + dur(l.timeQuality.skewP99Ms) : '-',
      el('small', {}, [l ? l.timeQuality.outOfOrder + ' out of order' : ''])]),
    el('td', { 'data-field': 'ledger' }, ledger),
  ]);
}
function renderStreams(s) {
  const list = s.streams || [];
  const tbody = document.querySelector('#streams tbody');
  tbody.replaceChildren(...list.map((st) => streamRow(st, s.atMs)));
  if (list.length === 0) tbody.append(el('tr', {}, [el('td', { colspan: '13', class: 'dim' }, ['no streams defined (tickfleet streams add)'])]));
  $('t-streams').textContent = list.filter((st) => st.holder).length + ' / ' + list.length;
}
function render(s) {
  const tbody = document.querySelector('#venues tbody');
  tbody.replaceChildren(...s.venues.map((v) => row(v, s.atMs)));
  if (s.venues.length === 0) tbody.append(el('tr', {}, [el('td', { colspan: '10', class: 'dim' }, ['no connectors in the store yet'])]));
  $('t-venues').textContent = s.venues.length;
  $('t-runnable').textContent = s.totals.runnable;
  $('t-blocked').textContent = s.totals.blocked;
  $('t-active').textContent = s.totals.active;
  $('t-failed').textContent = s.totals.failed;
  $('t-frozen').textContent = s.totals.frozenVenues;
  $('t-gaps').textContent = s.totals.openGaps;
  $('t-spool').textContent = s.spool ? s.spool.segments + ' seg · ' + bytes(s.spool.bytes) : 'n/a';
  renderStreams(s);
  $('updated').textContent = new Date(s.atMs).toISOString().slice(11, 19) + 'Z';
}
async function tick() {
  try {
    const res = await fetch('api/status', { headers: { accept: 'application/json' }, credentials: 'same-origin' });
    if (!res.ok) throw new Error('GET api/status: HTTP ' + res.status);
    render(await res.json());
    $('error').textContent = '';
  } catch (err) {
    $('error').textContent = String(err && err.message ? err.message : err);
  } finally {
    setTimeout(tick, CONFIG.refreshMs);
  }
}
// ---- history charts (uPlot) ----
const MARK_FILL = { '429': 'rgba(210,153,34,.22)', '418': 'rgba(248,81,73,.22)', budget: 'rgba(88,166,255,.16)', manual: 'rgba(138,150,163,.22)' };
const MARK_EDGE = { '429': 'rgba(210,153,34,.9)', '418': 'rgba(248,81,73,.9)', budget: 'rgba(88,166,255,.8)', manual: 'rgba(138,150,163,.9)' };
// What each small chart plots from a venue's history; two scales where magnitudes differ.
const CHARTS = [
  { key: 'budget', title: 'budget used vs limit (per window)', series: [
    { label: 'used', col: 'budgetUsed', stroke: '#58a6ff', fill: 'rgba(88,166,255,.12)' },
    { label: 'limit', col: 'budgetLimit', stroke: '#8a96a3', dash: [4, 4] }] },
  { key: 'throughput', title: 'units/s and records/s', series: [
    { label: 'units/s', col: 'unitsPerSec', stroke: '#3fb950', scale: 'u' },
    { label: 'records/s', col: 'recordsPerSec', stroke: '#d2a8ff', scale: 'r' }] },
  { key: 'concurrency', title: 'AIMD concurrency (in-flight limit)', series: [
    { label: 'limit', col: 'concurrency', stroke: '#e3b341', paths: 'stepped' },
    { label: 'ceiling', col: 'concurrencyMax', stroke: '#8a96a3', dash: [4, 4] }] },
  { key: 'lag', title: 'oldest cursor lag (s)', series: [
    { label: 'lag s', col: 'cursorLagSec', stroke: '#f0883e' }] },
];
const panels = new Map();
let range = 15;
let windowS = [0, 1];
function clock(ms) { return new Date(ms).toISOString().slice(11, 19) + 'Z'; }
// Freeze bands behind the lines: each mark a band from its start to its end, clipped to the plot.
function bandsPlugin(panel) {
  return { hooks: { drawClear: [(u) => {
    const ctx = u.ctx;
    const { left, top, width, height } = u.bbox;
    ctx.save();
    for (const m of panel.marks) {
      const x0 = Math.max(left, u.valToPos(m.fromMs / 1000, 'x', true));
      const x1 = Math.min(left + width, u.valToPos(m.toMs / 1000, 'x', true));
      if (x1 < left || x0 > left + width) continue;
      ctx.fillStyle = MARK_FILL[m.cause] || MARK_FILL.manual;
      ctx.fillRect(x0, top, Math.max(2, x1 - x0), height);
      ctx.fillStyle = MARK_EDGE[m.cause] || MARK_EDGE.manual;
      ctx.fillRect(x0, top, 2, height);
    }
    ctx.restore();
  }] } };
}
function chartData(spec, h) { return [h.t.map((t) => t / 1000), ...spec.series.map((s) => h[s.col])]; }
function makeChart(spec, panel, host, h) {
  const width = 330;
  const scales = { x: { time: true, range: () => windowS } };
  // Times in UTC like the rest of the page.
  const axes = [{ stroke: '#8a96a3', grid: { stroke: '#26303b' }, ticks: { stroke: '#26303b' }, size: 28,
    values: (u, splits) => splits.map((t) => new Date(t * 1000).toISOString().slice(11, 16)) }];
  const series = [{}];
  spec.series.forEach((s, i) => {
    const scale = s.scale || 'y';
    if (!scales[scale]) {
      scales[scale] = { range: (u, min, max) => [0, Math.max(1, max === null ? 1 : max * 1.1)] };
      axes.push({ scale, stroke: s.scale ? s.stroke : '#8a96a3', grid: { show: axes.length === 1, stroke: '#26303b' }, ticks: { stroke: '#26303b' }, side: axes.length === 1 ? 3 : 1, size: 54 });
    }
    series.push({ label: s.label, scale, stroke: s.stroke, width: 1.5, fill: s.fill, dash: s.dash, spanGaps: false,
      paths: s.paths === 'stepped' ? uPlot.paths.stepped({ align: 1 }) : undefined, points: { show: false } });
  });
  // The legend is drawn in the title (uPlot's own is a table, which would mix with the venue table's rows).
  return new uPlot({ width, height: 150, scales, axes, series, legend: { show: false }, cursor: { show: false }, plugins: [bandsPlugin(panel)] }, chartData(spec, h), host);
}
function venuePanel(venue) {
  let panel = panels.get(venue);
  if (panel) return panel;
  const root = el('div', { class: 'venue-charts', 'data-venue': venue }, [el('h3', {}, [venue]), el('ul', { class: 'marks' })]);
  const charts = el('div', { class: 'charts' });
  root.append(charts);
  panel = { root, charts, plots: [], marks: [] };
  panels.set(venue, panel);
  return panel;
}
function renderHistory(hist) {
  const host = $('charts');
  const venues = hist.venues.map((h) => h.venue);
  for (const [venue, panel] of panels) if (!venues.includes(venue)) { panel.plots.forEach((p) => p.destroy()); panel.root.remove(); panels.delete(venue); }
  windowS = [(hist.atMs - hist.minutes * 60000) / 1000, hist.atMs / 1000];
  for (const h of hist.venues) {
    const panel = venuePanel(h.venue);
    panel.marks = h.marks;
    // What the bands show, for people (the list) and for tests and scripts (the attributes).
    panel.root.setAttribute('data-marks', JSON.stringify(h.marks));
    panel.root.setAttribute('data-samples', String(h.t.length));
    panel.root.setAttribute('data-units', String(h.totals.unitsCompleted));
    panel.root.setAttribute('data-records', String(h.totals.recordsWritten));
    panel.root.querySelector('.marks').replaceChildren(...h.marks.map((m) =>
      el('li', { 'data-cause': m.cause }, [m.cause + ' freeze ' + clock(m.fromMs) + ' → ' + clock(m.toMs) + ' (' + dur(m.toMs - m.fromMs) + ')'])));
    if (panel.plots.length === 0) {
      for (const spec of CHARTS) {
        const legend = spec.series.map((s) => el('span', {}, [el('span', { class: 'swatch', style: 'background:' + s.stroke }), s.label]));
        const box = el('div', { class: 'chart', 'data-chart': spec.key }, [el('div', { class: 'title' }, [spec.title, ...legend])]);
        panel.charts.append(box);
        panel.plots.push(makeChart(spec, panel, box, h));
      }
    } else {
      CHARTS.forEach((spec, i) => panel.plots[i].setData(chartData(spec, h)));
    }
    host.append(panel.root);
  }
  document.body.setAttribute('data-history-at', String(hist.atMs));
}
async function loadHistory() {
  try {
    const res = await fetch('api/history?minutes=' + range, { headers: { accept: 'application/json' }, credentials: 'same-origin' });
    if (!res.ok) throw new Error('GET api/history: HTTP ' + res.status);
    renderHistory(await res.json());
  } catch (err) {
    $('error').textContent = String(err && err.message ? err.message : err);
  }
}
function historyTick() {
  loadHistory().finally(() => setTimeout(historyTick, CONFIG.historyRefreshMs));
}
$('range').addEventListener('change', () => {
  range = Number($('range').value);
  loadHistory();
});
$('sample-every').textContent = dur(CONFIG.historyIntervalMs);
$('every').textContent = dur(CONFIG.refreshMs);
$('queues-link').href = CONFIG.queuesPath;
$('mode').textContent = CONFIG.readOnly ? 'read-only' : 'job actions enabled';
tick();
historyTick();
</script>
</body>
</html>
`;
}
