import type UPlot from 'uplot';
import type { FleetHistory, FreezeMark, VenueHistory } from '../fleet-history.js';
import { clock, dur, el } from './dom.js';

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
  /** A second y scale, for a series whose magnitude differs from the first's. */
  scale?: string;
  paths?: 'stepped';
}

interface ChartSpec {
  key: string;
  title: string;
  series: SeriesSpec[];
}

// What each small chart plots from a venue's history; two scales where magnitudes differ.
const CHARTS: readonly ChartSpec[] = [
  {
    key: 'budget',
    title: 'budget used vs limit (per window)',
    series: [
      { label: 'used', col: 'budgetUsed', stroke: '#58a6ff', fill: 'rgba(88,166,255,.12)' },
      { label: 'limit', col: 'budgetLimit', stroke: '#8a96a3', dash: [4, 4] },
    ],
  },
  {
    key: 'throughput',
    title: 'units/s and records/s',
    series: [
      { label: 'units/s', col: 'unitsPerSec', stroke: '#3fb950', scale: 'u' },
      { label: 'records/s', col: 'recordsPerSec', stroke: '#d2a8ff', scale: 'r' },
    ],
  },
  {
    key: 'concurrency',
    title: 'AIMD concurrency (in-flight limit)',
    series: [
      { label: 'limit', col: 'concurrency', stroke: '#e3b341', paths: 'stepped' },
      { label: 'ceiling', col: 'concurrencyMax', stroke: '#8a96a3', dash: [4, 4] },
    ],
  },
  { key: 'lag', title: 'oldest cursor lag (s)', series: [{ label: 'lag s', col: 'cursorLagSec', stroke: '#f0883e' }] },
];

/** One venue's box under the tables: its freeze list and one uPlot chart per {@link CHARTS} entry. */
interface VenuePanel {
  root: HTMLElement;
  charts: HTMLElement;
  plots: UPlot[];
  marks: FreezeMark[];
}

/**
 * The history charts: one panel per venue, created on the venue's first history and then fed new
 * data in place; a venue gone from the history loses its panel.
 */
export class HistoryCharts {
  private readonly panels = new Map<string, VenuePanel>();
  /** The x range every chart shows (epoch seconds): the requested minutes up to the history's time. */
  private windowS: [number, number] = [0, 1];

  constructor(private readonly host: HTMLElement) {}

  render(hist: FleetHistory): void {
    const venues = hist.venues.map((h) => h.venue);
    for (const [venue, panel] of this.panels)
      if (!venues.includes(venue)) {
        panel.plots.forEach((p) => p.destroy());
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
      if (panel.plots.length === 0) {
        for (const spec of CHARTS) {
          const legend = spec.series.map((s) => el('span', {}, [el('span', { class: 'swatch', style: 'background:' + s.stroke }), s.label]));
          const box = el('div', { class: 'chart', 'data-chart': spec.key }, [el('div', { class: 'title' }, [spec.title, ...legend])]);
          panel.charts.append(box);
          panel.plots.push(this.makeChart(spec, panel, box, h));
        }
      } else {
        CHARTS.forEach((spec, i) => panel.plots[i]?.setData(chartData(spec, h)));
      }
      this.host.append(panel.root);
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

  private makeChart(spec: ChartSpec, panel: VenuePanel, host: HTMLElement, h: VenueHistory): UPlot {
    const width = 330;
    const scales: Record<string, UPlot.Scale> = { x: { time: true, range: () => this.windowS } };
    // Times in UTC like the rest of the page.
    const axes: UPlot.Axis[] = [
      {
        stroke: '#8a96a3',
        grid: { stroke: '#26303b' },
        ticks: { stroke: '#26303b' },
        size: 28,
        values: (_u, splits) => splits.map((t) => new Date(t * 1000).toISOString().slice(11, 16)),
      },
    ];
    const series: UPlot.Series[] = [{}];
    for (const s of spec.series) {
      const scale = s.scale ?? 'y';
      if (!scales[scale]) {
        scales[scale] = { range: (_u, _min, max) => [0, Math.max(1, max === null ? 1 : max * 1.1)] };
        axes.push({
          scale,
          stroke: s.scale ? s.stroke : '#8a96a3',
          grid: { show: axes.length === 1, stroke: '#26303b' },
          ticks: { stroke: '#26303b' },
          side: axes.length === 1 ? 3 : 1,
          size: 54,
        });
      }
      series.push({
        label: s.label,
        scale,
        stroke: s.stroke,
        width: 1.5,
        fill: s.fill,
        dash: s.dash,
        spanGaps: false,
        paths: s.paths === 'stepped' ? uPlot.paths.stepped?.({ align: 1 }) : undefined,
        points: { show: false },
      });
    }
    // The legend is drawn in the title (uPlot's own is a table, which would mix with the venue table's rows).
    return new uPlot(
      { width, height: 150, scales, axes, series, legend: { show: false }, cursor: { show: false }, plugins: [bandsPlugin(panel)] },
      chartData(spec, h),
      host,
    );
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
