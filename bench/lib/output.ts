import type { Summary } from './stats.js';

/** One row of the table: a figure of the server next to the same figure of both floors. */
export interface Figure {
  group: string;
  label: string;
  unit: 'reports/s' | 'promotions/s' | 'reads/s' | 'ms';
  server: number;
  fastify: number;
  driver: number;
  note?: string;
}

export interface Criterion {
  name: string;
  /** The inequality, spelled out with the measured numbers. */
  measured: string;
  holds: boolean;
  note?: string;
  /** A figure printed beside the criteria for information, not judged (`holds` is then not printed). */
  informational?: boolean;
}

export interface ChartSeries {
  name: string;
  /** x → y */
  points: Array<[number, number]>;
  style: 'server' | 'server-alt' | 'driver' | 'driver-alt' | 'fastify' | 'reference';
}

export interface ChartPanel {
  title: string;
  xLabel: string;
  yLabel: string;
  series: ChartSeries[];
}

export const ratio = (server: number, floor: number): number => server / floor;

const fmt = (v: number, unit: Figure['unit']): string => {
  if (!Number.isFinite(v)) return 'n/a';
  if (unit === 'ms') return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2);
  return v >= 100 ? v.toFixed(0) : v.toFixed(1);
};
const fmtRatio = (r: number): string => (Number.isFinite(r) ? `${r >= 10 ? r.toFixed(0) : r.toFixed(2)}` : 'n/a');

export function markdownTable (figures: Figure[]): string {
  const lines = [
    '| figure | server | plain Fastify floor | server ÷ Fastify | bare-driver floor | server ÷ driver |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
  ];
  let group = '';
  for (const f of figures) {
    if (f.group !== group) {
      group = f.group;
      lines.push(`| **${group}** | | | | | |`);
    }
    const cell = (v: number): string => (Number.isFinite(v) ? `${fmt(v, f.unit)} ${f.unit}` : 'n/a');
    const cells = [cell(f.server), cell(f.fastify), fmtRatio(ratio(f.server, f.fastify)), cell(f.driver), fmtRatio(ratio(f.server, f.driver))];
    lines.push(`| ${f.label}${f.note ? ` (${f.note})` : ''} | ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}

export function criteriaList (criteria: Criterion[]): string {
  const verdict = (c: Criterion): string => (c.informational === true ? '*information, not a criterion*' : c.holds ? '**holds**' : '**does not hold**');
  return criteria.map((c) => `- ${verdict(c)} — ${c.name}: ${c.measured}${c.note ? `. ${c.note}` : ''}`).join('\n');
}

/** Latency figures (p50, p99) of a summary triple. */
export function latencyFigures (group: string, label: string, t: Record<'server' | 'fastify' | 'driver', Summary>, note?: string): Figure[] {
  return [
    { group, label: `${label}: p50`, unit: 'ms', server: t.server.p50, fastify: t.fastify.p50, driver: t.driver.p50, ...(note ? { note } : {}) },
    { group, label: `${label}: p99`, unit: 'ms', server: t.server.p99, fastify: t.fastify.p99, driver: t.driver.p99 },
  ];
}

// SVG ------------------------------------------------------------------------------------------

const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

const STYLES: Record<ChartSeries['style'], { stroke: string, dash: string, width: number }> = {
  server: { stroke: '#c0392b', dash: '', width: 2.5 },
  'server-alt': { stroke: '#e67e22', dash: '', width: 2 },
  driver: { stroke: '#2471a3', dash: '6 4', width: 2 },
  'driver-alt': { stroke: '#5dade2', dash: '6 4', width: 2 },
  fastify: { stroke: '#7f8c8d', dash: '2 3', width: 2 },
  reference: { stroke: '#27ae60', dash: '1 4', width: 1.5 },
};

const niceMax = (v: number): number => {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= v) return m * p;
  return 10 * p;
};

function panel (p: ChartPanel, x0: number, y0: number, w: number, h: number): string {
  const left = x0 + 64;
  const right = x0 + w - 16;
  const top = y0 + 40;
  const bottom = y0 + h - 120;
  const xs = [...new Set(p.series.flatMap((s) => s.points.map(([x]) => x)))].sort((a, b) => a - b);
  const lx = xs.map((x) => Math.log10(x));
  const minX = Math.min(...lx);
  const maxX = Math.max(...lx);
  const ymax = niceMax(Math.max(...p.series.flatMap((s) => s.points.map(([, y]) => y)).filter(Number.isFinite)));
  const px = (x: number): number => (maxX === minX ? (left + right) / 2 : left + ((Math.log10(x) - minX) / (maxX - minX)) * (right - left));
  const py = (y: number): number => bottom - (y / ymax) * (bottom - top);
  const out: string[] = [];
  out.push(`<text x="${x0 + w / 2}" y="${y0 + 22}" text-anchor="middle" font-size="15" font-weight="bold">${esc(p.title)}</text>`);
  for (let i = 0; i <= 5; i++) {
    const v = (ymax * i) / 5;
    const y = py(v);
    out.push(`<line x1="${left}" y1="${y.toFixed(1)}" x2="${right}" y2="${y.toFixed(1)}" stroke="#e5e5e5"/>`);
    out.push(`<text x="${left - 6}" y="${(y + 4).toFixed(1)}" text-anchor="end" font-size="11">${v.toFixed(ymax / 5 < 1 ? 1 : 0)}</text>`);
  }
  for (const x of xs) {
    out.push(`<line x1="${px(x).toFixed(1)}" y1="${top}" x2="${px(x).toFixed(1)}" y2="${bottom}" stroke="#f0f0f0"/>`);
    out.push(`<text x="${px(x).toFixed(1)}" y="${bottom + 16}" text-anchor="middle" font-size="11">${x >= 1000 ? `${x / 1000}k` : x}</text>`);
  }
  out.push(`<line x1="${left}" y1="${bottom}" x2="${right}" y2="${bottom}" stroke="#333"/>` +
    `<line x1="${left}" y1="${top}" x2="${left}" y2="${bottom}" stroke="#333"/>`);
  out.push(`<text x="${(left + right) / 2}" y="${bottom + 34}" text-anchor="middle" font-size="12">${esc(p.xLabel)}</text>`);
  out.push(`<text transform="translate(${x0 + 16} ${(top + bottom) / 2}) rotate(-90)" text-anchor="middle" font-size="12">${esc(p.yLabel)}</text>`);
  p.series.forEach((s, i) => {
    const st = STYLES[s.style];
    const pts = s.points.filter(([, y]) => Number.isFinite(y)).map(([x, y]) => `${px(x).toFixed(1)},${py(y).toFixed(1)}`);
    const dash = st.dash ? `stroke-dasharray="${st.dash}"` : '';
    out.push(`<polyline fill="none" stroke="${st.stroke}" stroke-width="${st.width}" ${dash} points="${pts.join(' ')}"/>`);
    for (const pt of pts) {
      const [cx, cy] = pt.split(',');
      out.push(`<circle cx="${cx}" cy="${cy}" r="3" fill="${st.stroke}"/>`);
    }
    const ly = bottom + 52 + Math.floor(i / 2) * 16;
    const lx0 = left + (i % 2) * ((right - left) / 2);
    out.push(`<line x1="${lx0}" y1="${ly - 4}" x2="${lx0 + 28}" y2="${ly - 4}" stroke="${st.stroke}" stroke-width="${st.width}" ${dash}/>`);
    out.push(`<text x="${lx0 + 34}" y="${ly}" font-size="11">${esc(s.name)}</text>`);
  });
  return out.join('\n');
}

/** A hand-written SVG: the panels side by side, log-scale x axes, linear y axes from 0. */
export function chartSvg (title: string, subtitle: string, panels: ChartPanel[]): string {
  const w = 520;
  const h = 460;
  const width = w * panels.length;
  const height = h + 50;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif">`,
    '<rect width="100%" height="100%" fill="#fff"/>',
    `<text x="${width / 2}" y="22" text-anchor="middle" font-size="16" font-weight="bold">${esc(title)}</text>`,
    `<text x="${width / 2}" y="40" text-anchor="middle" font-size="11" fill="#555">${esc(subtitle)}</text>`,
    ...panels.map((p, i) => panel(p, i * w, 50, w, h)),
    '</svg>',
    '',
  ].join('\n');
}
