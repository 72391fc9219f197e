import type UPlot from 'uplot';
import type { FleetHistory, FreezeMark, VenueHistory } from '../fleet-history.js';
import { clock, compact, dur, el } from './dom.js';

/** uPlot's browser build, which the page loads as a classic script (assets/uplot.iife.min.js) before this module. */
declare const uPlot: typeof UPlot;

const MARK_FILL: Record<FreezeMark['cause'], string> = {
  '429': 'rgba(210,153,34,.22)',
  '418': 'rgba(248,81,73,.22)',
  budget: 'rgba(88,166,255,.16)',
  manual: 'rgba(138,150,163,.22)',
};
const MARK_EDGE: Record<FreezeMark['cause'], string> = {
  '429': 'rgba(210,153,34,.9)',
  '418': 'rgba(248,81,73,.9)',
  budget: 'rgba(88,166,255,.8)',
  manual: 'rgba(138,150,163,.9)',
};

/** The columns of a venue's history a chart can plot (one number per sample time). */
type Column = { [K in keyof VenueHistory]: VenueHistory[K] extends readonly (number | null)[] ? K : never }[keyof VenueHistory];

interface SeriesSpec {
  label: string;
  col: Column;
  stroke: string;
  fill?: string;
  dash?: number[];
  paths?: 'stepped';
}

interface ChartSpec {
  key: string;
  title: string;
  /** What the chart shows, as the title's tooltip. */
  about: string;
  series: SeriesSpec[];
  /** A value as the y axis writes it (short: `1.2k`, `14d`). */
  axis: (v: number) => string;
  /** A value as the legend writes it. */
  value: (v: number) => string;
  /** The tick steps the y axis may use, when decimal steps would not read well (durations). */
  incrs?: number[];
}

/** A legend figure: whole up to two decimals below 10,000 (as the table writes it), compact above. */
function figure(v: number): string {
  return Math.abs(v) < 10_000 ? String(+v.toFixed(2)) : compact(v);
}

/** A lag in seconds as a duration (`4m30s`, `14d`). */
function lagText(s: number): string {
  return s === 0 ? '0' : dur(s * 1000);
}

const MIN = 60;
const HOUR = 3600;
const DAY = 86400;
/** Lag ticks step by whole seconds, minutes, hours and days, so `dur` labels them exactly. */
const DURATION_INCRS = [1, 2, 5, 10, 15, 30, MIN, 2 * MIN, 5 * MIN, 10 * MIN, 15 * MIN, 30 * MIN, HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR].concat(
  [1, 2, 7, 14, 30, 60, 90, 180, 365, 730, 1825].map((d) => d * DAY),
);

// Series of one magnitude share a chart. Units/s and records/s get one each: on two scales of one
// chart one line lay over the other whenever each unit wrote as many records as the last.
const CHARTS: readonly ChartSpec[] = [
  {
    key: 'budget',
    title: 'budget used / limit',
    about: 'weight spent in the current window against the effective limit (limit × headroom)',
    axis: compact,
    value: figure,
    series: [
      { label: 'used', col: 'budgetUsed', stroke: '#58a6ff', fill: 'rgba(88,166,255,.12)' },
      { label: 'limit', col: 'budgetLimit', stroke: '#8a96a3', dash: [4, 4] },
    ],
  },
  {
    key: 'units',
    title: 'units/s',
    about: 'units completed per second, fleet-wide',
    axis: compact,
    value: figure,
    series: [{ label: 'completed', col: 'unitsPerSec', stroke: '#3fb950', fill: 'rgba(63,185,80,.12)' }],
  },
  {
    key: 'records',
    title: 'records/s',
    about: 'records the completed units wrote per second',
    axis: compact,
    value: figure,
    series: [{ label: 'written', col: 'recordsPerSec', stroke: '#d2a8ff', fill: 'rgba(210,168,255,.12)' }],
  },
  {
    key: 'concurrency',
    title: 'AIMD concurrency',
    about: 'the fleet-wide in-flight limit workers obey, and its ceiling (the connector’s max in-flight)',
    axis: compact,
    value: figure,
    series: [
      { label: 'limit', col: 'concurrency', stroke: '#e3b341', paths: 'stepped' },
      { label: 'ceiling', col: 'concurrencyMax', stroke: '#8a96a3', dash: [4, 4] },
    ],
  },
  {
    key: 'lag',
    title: 'oldest cursor lag',
    about: 'age of the newest closed candle of the venue’s most stale ohlcv job',
    axis: lagText,
    value: lagText,
    incrs: DURATION_INCRS,
    series: [{ label: 'lag', col: 'cursorLagSec', stroke: '#f0883e' }],
  },
];

/** Height of every chart's canvas (CSS px); the width is its grid cell's. */
const HEIGHT = 150;
/** The axes' font, also the one their widths are measured in, so labels get the room they need. */
const AXIS_FONT = '11px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
const TICK = 4;
const GAP = 4;
const AXIS_STROKE = '#8a96a3';
const GRID_STROKE = '#26303b';

let measurer: CanvasRenderingContext2D | null | undefined;

/** Room for a y axis: its widest label in {@link AXIS_FONT}, the tick and the gap. */
function yAxisSize(_u: UPlot, values: string[] | null): number {
  measurer ??= document.createElement('canvas').getContext('2d');
  if (!measurer || !values) return 32;
  measurer.font = AXIS_FONT;
  const widest = values.reduce((w, v) => Math.max(w, measurer!.measureText(v).width), 0);
  return Math.ceil(widest) + TICK + GAP + 2;
}

/** The last value of a series that is not null, which the legend shows while no cursor is on the chart. */
function lastValue(values: ArrayLike<number | null | undefined>): number | null {
  for (let i = values.length - 1; i >= 0; i--) {
    const v = values[i];
    if (v !== null && v !== undefined) return v;
  }
  return null;
}

/** One chart: the uPlot drawing and the element it fills (the one the ResizeObserver watches). */
interface Chart {
  plot: UPlot;
  host: HTMLElement;
}

/** One venue's box under the tables: its freeze list and one chart per {@link CHARTS} entry. */
interface VenuePanel {
  root: HTMLElement;
  charts: HTMLElement;
  plots: Chart[];
  marks: FreezeMark[];
}

/**
 * The history charts: one panel per venue, created on the venue's first history and then fed new
 * data in place; a venue gone from the history loses its panel. Each chart fills its grid cell and
 * follows the cell's width as the window changes (uPlot draws at a fixed size, so a
 * ResizeObserver hands it each new width).
 */
export class HistoryCharts {
  private readonly panels = new Map<string, VenuePanel>();
  private readonly byHost = new WeakMap<Element, UPlot>();
  private readonly resizer = new ResizeObserver((entries) => {
    for (const entry of entries) {
      const plot = this.byHost.get(entry.target);
      const width = Math.floor(entry.contentRect.width);
      if (plot && width > 0 && width !== plot.width) plot.setSize({ width, height: HEIGHT });
    }
  });
  /** The x range every chart shows (epoch seconds): the requested minutes up to the history's time. */
  private windowS: [number, number] = [0, 1];

  constructor(private readonly host: HTMLElement) {}

  render(hist: FleetHistory): void {
    const venues = hist.venues.map((h) => h.venue);
    for (const [venue, panel] of this.panels)
      if (!venues.includes(venue)) {
        for (const c of panel.plots) {
          this.resizer.unobserve(c.host);
          c.plot.destroy();
        }
        panel.root.remove();
        this.panels.delete(venue);
      }
    this.windowS = [(hist.atMs - hist.minutes * 60000) / 1000, hist.atMs / 1000];
    for (const h of hist.venues) {
      const panel = this.venuePanel(h.venue);
      panel.marks = h.marks;
      // What the bands show, for people (the list) and for tests and scripts (the attributes).
      panel.root.setAttribute('data-marks', JSON.stringify(h.marks));
      panel.root.setAttribute('data-samples', String(h.t.length));
      panel.root.setAttribute('data-units', String(h.totals.unitsCompleted));
      panel.root.setAttribute('data-records', String(h.totals.recordsWritten));
      panel.root
        .querySelector('.marks')
        ?.replaceChildren(
          ...h.marks.map((m) =>
            el('li', { 'data-cause': m.cause }, [m.cause + ' freeze ' + clock(m.fromMs) + ' → ' + clock(m.toMs) + ' (' + dur(m.toMs - m.fromMs) + ')']),
          ),
        );
      // In the page before its charts are made, so each is made at its cell's width.
      this.host.append(panel.root);
      if (panel.plots.length === 0) {
        for (const spec of CHARTS) panel.plots.push(this.makeChart(spec, panel, h));
      } else {
        CHARTS.forEach((spec, i) => panel.plots[i]?.plot.setData(chartData(spec, h)));
      }
    }
    document.body.setAttribute('data-history-at', String(hist.atMs));
  }

  private venuePanel(venue: string): VenuePanel {
    const known = this.panels.get(venue);
    if (known) return known;
    const root = el('div', { class: 'venue-charts', 'data-venue': venue }, [el('h3', {}, [venue]), el('ul', { class: 'marks' })]);
    const charts = el('div', { class: 'charts' });
    root.append(charts);
    const panel: VenuePanel = { root, charts, plots: [], marks: [] };
    this.panels.set(venue, panel);
    return panel;
  }

  private makeChart(spec: ChartSpec, panel: VenuePanel, h: VenueHistory): Chart {
    // The legend: one entry per series with its latest value, or the value under the cursor.
    const values = spec.series.map((s) => el('span', { class: 'v', 'data-value': s.label }));
    const at = el('span', { class: 'at' });
    const legend = el(
      'div',
      { class: 'legend' },
      spec.series.map((s, i) =>
        el('span', { class: 'entry', 'data-series': s.label }, [el('span', { class: 'swatch', style: 'background:' + s.stroke }), s.label + ' ', values[i]!]),
      ),
    );
    legend.append(at);
    const plotHost = el('div', { class: 'plot' });
    const box = el('div', { class: 'chart', 'data-chart': spec.key }, [el('div', { class: 'title', title: spec.about }, [spec.title]), legend, plotHost]);
    panel.charts.append(box);

    const showValues = (u: UPlot): void => {
      const idx = u.cursor.idx;
      spec.series.forEach((_s, i) => {
        const col = u.data[i + 1] ?? [];
        const v = idx === null || idx === undefined ? lastValue(col) : col[idx];
        values[i]!.textContent = v === null || v === undefined ? '-' : spec.value(v);
      });
      const t = idx === null || idx === undefined ? undefined : u.data[0][idx];
      at.textContent = t === undefined ? '' : clock(t * 1000);
    };

    const yScale: UPlot.Scale = { range: (_u, _min, max) => [0, Math.max(1, max === null ? 1 : max * 1.1)] };
    const scales: Record<string, UPlot.Scale> = { x: { time: true, range: () => this.windowS }, y: yScale };
    const axes: UPlot.Axis[] = [
      {
        // Times in UTC like the rest of the page.
        stroke: AXIS_STROKE,
        font: AXIS_FONT,
        grid: { stroke: GRID_STROKE },
        ticks: { stroke: GRID_STROKE, size: TICK },
        gap: GAP,
        size: 11 + TICK + GAP + 4,
        values: (_u, splits) => splits.map((t) => new Date(t * 1000).toISOString().slice(11, 16)),
      },
      {
        stroke: AXIS_STROKE,
        font: AXIS_FONT,
        grid: { stroke: GRID_STROKE },
        ticks: { stroke: GRID_STROKE, size: TICK },
        gap: GAP,
        size: yAxisSize,
        incrs: spec.incrs,
        values: (_u, splits) => splits.map(spec.axis),
      },
    ];
    const series: UPlot.Series[] = [
      {},
      ...spec.series.map((s): UPlot.Series => ({
        label: s.label,
        stroke: s.stroke,
        width: 1.5,
        fill: s.fill,
        dash: s.dash,
        spanGaps: false,
        paths: s.paths === 'stepped' ? uPlot.paths.stepped?.({ align: 1 }) : undefined,
        points: { show: false },
      })),
    ];
    const plot = new uPlot(
      {
        width: Math.max(100, Math.floor(plotHost.clientWidth)),
        height: HEIGHT,
        scales,
        axes,
        series,
        // The legend is drawn above the plot (uPlot's own is a table, which would take the venue table's styles).
        legend: { show: false },
        // A crosshair shared by the venue's charts, as dashboards do; no drag-zoom (the range is the selector's).
        cursor: { y: false, points: { show: false }, drag: { x: false, y: false }, sync: { key: 'venue:' + panel.root.dataset.venue } },
        hooks: { setCursor: [showValues], setData: [showValues] },
        plugins: [bandsPlugin(panel)],
      },
      chartData(spec, h),
      plotHost,
    );
    showValues(plot);
    this.byHost.set(plotHost, plot);
    this.resizer.observe(plotHost);
    return { plot, host: plotHost };
  }
}

function chartData(spec: ChartSpec, h: VenueHistory): UPlot.AlignedData {
  return [h.t.map((t) => t / 1000), ...spec.series.map((s) => h[s.col])];
}

// Freeze bands behind the lines: each mark a band from its start to its end, clipped to the plot.
function bandsPlugin(panel: VenuePanel): UPlot.Plugin {
  return {
    hooks: {
      drawClear: [
        (u) => {
          const ctx = u.ctx;
          const { left, top, width, height } = u.bbox;
          ctx.save();
          for (const m of panel.marks) {
            const x0 = Math.max(left, u.valToPos(m.fromMs / 1000, 'x', true));
            const x1 = Math.min(left + width, u.valToPos(m.toMs / 1000, 'x', true));
            if (x1 < left || x0 > left + width) continue;
            ctx.fillStyle = MARK_FILL[m.cause] ?? MARK_FILL.manual;
            ctx.fillRect(x0, top, Math.max(2, x1 - x0), height);
            ctx.fillStyle = MARK_EDGE[m.cause] ?? MARK_EDGE.manual;
            ctx.fillRect(x0, top, 2, height);
          }
          ctx.restore();
        },
      ],
    },
  };
}
