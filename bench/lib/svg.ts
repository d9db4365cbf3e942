// A small hand-written SVG chart writer: grouped bar charts and CDF line charts.
// Output is one standalone <svg> document (no scripts, no external fonts or styles), so
// any browser or image viewer shows it as is.

export interface Bar {
  label: string;
  /** null draws an "n/a" marker: the thing did not load or run there. */
  value: number | null;
  color?: string;
}

export interface BarGroup {
  label: string;
  bars: Bar[];
  /** Optional reference value for this group, drawn as a dashed line across it. */
  baseline?: { value: number; label: string };
}

export interface BarChartSpec {
  title: string;
  subtitle?: string;
  yLabel: string;
  groups: BarGroup[];
  log?: boolean;
  width?: number;
  height?: number;
  /** Formats value labels above bars and axis ticks. */
  format?: (v: number) => string;
}

export interface CdfSeries {
  label: string;
  /** Values at percentiles 0..100 in order (101 points), any unit. */
  points: number[];
  color?: string;
  /** SVG stroke-dasharray, e.g. "6 3"; solid when absent. */
  dash?: string;
}

export interface CdfChartSpec {
  title: string;
  subtitle?: string;
  xLabel: string;
  series: CdfSeries[];
  logX?: boolean;
  width?: number;
  height?: number;
  /** Vertical reference lines (a goal, a bound), dashed, labelled at the top. */
  markers?: { value: number; label: string }[];
}

export const PALETTE = [
  "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
  "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#ad494a",
];

const FONT = 'font-family="Helvetica, Arial, sans-serif"';

export function escapeXml(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/** 1234567 -> "1.23M", 0.5 -> "0.5" */
export function formatSi(v: number): string {
  const a = Math.abs(v);
  if (a >= 1e9) return trim(v / 1e9) + "G";
  if (a >= 1e6) return trim(v / 1e6) + "M";
  if (a >= 1e3) return trim(v / 1e3) + "k";
  return trim(v);
}

function trim(v: number): string {
  const a = Math.abs(v);
  const s = a >= 100 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : v.toFixed(2);
  return s.includes(".") ? s.replace(/0+$/, "").replace(/\.$/, "") : s;
}

function text(x: number, y: number, s: string, attrs = ""): string {
  return `<text x="${r(x)}" y="${r(y)}" ${FONT} ${attrs}>${escapeXml(s)}</text>`;
}

function r(v: number): string {
  return (Math.round(v * 10) / 10).toString();
}

function doc(width: number, height: number, body: string[]): string {
  return [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">`,
    `<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`,
    ...body,
    `</svg>`,
    "",
  ].join("\n");
}

/** Axis scale: maps a value to [0, 1], and proposes tick values. */
interface Scale {
  map(v: number): number;
  ticks: number[];
}

function linearScale(max: number): Scale {
  const top = niceCeil(max > 0 ? max : 1);
  const step = top / 5;
  const ticks: number[] = [];
  for (let i = 0; i <= 5; i++) ticks.push(step * i);
  return { map: (v) => Math.max(0, Math.min(1, v / top)), ticks };
}

function logScale(min: number, max: number): Scale {
  const lo = Math.floor(Math.log10(Math.max(min, 1e-9)));
  const hi = Math.max(lo + 1, Math.ceil(Math.log10(Math.max(max, 1e-9))));
  const ticks: number[] = [];
  for (let e = lo; e <= hi; e++) ticks.push(10 ** e);
  return {
    map: (v) => (v <= 0 ? 0 : Math.max(0, Math.min(1, (Math.log10(v) - lo) / (hi - lo)))),
    ticks,
  };
}

function niceCeil(v: number): number {
  const e = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * e >= v) return m * e;
  return 10 * e;
}

export function barChart(spec: BarChartSpec): string {
  const width = spec.width ?? 960;
  const height = spec.height ?? 480;
  const fmt = spec.format ?? formatSi;
  const m = { left: 80, right: 20, top: spec.subtitle ? 70 : 50, bottom: 110 };
  const plotW = width - m.left - m.right;
  const plotH = height - m.top - m.bottom;
  const values = spec.groups.flatMap((g) => [...g.bars.map((b) => b.value ?? 0), g.baseline?.value ?? 0]);
  const positive = values.filter((v) => v > 0);
  const scale = spec.log
    ? logScale(positive.length ? Math.min(...positive) : 1, positive.length ? Math.max(...positive) : 10)
    : linearScale(Math.max(0, ...values));
  const y = (v: number): number => m.top + plotH * (1 - scale.map(v));
  const out: string[] = [];

  out.push(text(width / 2, 24, spec.title, 'font-size="18" font-weight="bold" text-anchor="middle"'));
  if (spec.subtitle) out.push(text(width / 2, 44, spec.subtitle, 'font-size="12" fill="#555" text-anchor="middle"'));

  // Grid and y ticks.
  for (const t of scale.ticks) {
    out.push(`<line x1="${m.left}" y1="${r(y(t))}" x2="${width - m.right}" y2="${r(y(t))}" stroke="#e5e5e5"/>`);
    out.push(text(m.left - 6, y(t) + 4, fmt(t), 'font-size="11" text-anchor="end" fill="#333"'));
  }
  out.push(`<line x1="${m.left}" y1="${m.top}" x2="${m.left}" y2="${m.top + plotH}" stroke="#333"/>`);
  out.push(`<line x1="${m.left}" y1="${m.top + plotH}" x2="${width - m.right}" y2="${m.top + plotH}" stroke="#333"/>`);
  out.push(text(18, m.top + plotH / 2, spec.yLabel, `font-size="12" text-anchor="middle" transform="rotate(-90 18 ${r(m.top + plotH / 2)})"`));

  const groupW = plotW / Math.max(1, spec.groups.length);
  spec.groups.forEach((g, gi) => {
    const gx = m.left + gi * groupW;
    const inner = groupW * 0.84;
    const barW = inner / Math.max(1, g.bars.length);
    const x0 = gx + (groupW - inner) / 2;
    g.bars.forEach((b, bi) => {
      const x = x0 + bi * barW;
      const color = b.color ?? PALETTE[bi % PALETTE.length];
      const cx = x + barW / 2;
      if (b.value === null) {
        out.push(text(cx, m.top + plotH - 6, "n/a", 'font-size="10" fill="#999" text-anchor="middle"'));
      } else {
        const top = y(b.value);
        out.push(`<rect x="${r(x + 1)}" y="${r(top)}" width="${r(Math.max(1, barW - 2))}" height="${r(m.top + plotH - top)}" fill="${color}"><title>${escapeXml(`${g.label} / ${b.label}: ${fmt(b.value)}`)}</title></rect>`);
        out.push(text(cx, top - 4, fmt(b.value), 'font-size="10" text-anchor="middle" fill="#222"'));
      }
      // Bar label, rotated under the axis.
      const ly = m.top + plotH + 10;
      out.push(text(cx, ly, b.label, `font-size="10" text-anchor="end" fill="#333" transform="rotate(-40 ${r(cx)} ${r(ly)})"`));
    });
    if (g.baseline !== undefined && g.baseline.value > 0) {
      const by = y(g.baseline.value);
      out.push(`<line x1="${r(x0)}" y1="${r(by)}" x2="${r(x0 + inner)}" y2="${r(by)}" stroke="#000" stroke-width="1.5" stroke-dasharray="6 4"/>`);
      out.push(text(x0 + inner, by - 4, g.baseline.label, 'font-size="10" text-anchor="end" font-style="italic" fill="#000"'));
    }
    out.push(text(gx + groupW / 2, height - 12, g.label, 'font-size="14" font-weight="bold" text-anchor="middle"'));
    if (gi > 0) out.push(`<line x1="${r(gx)}" y1="${m.top}" x2="${r(gx)}" y2="${m.top + plotH}" stroke="#ccc" stroke-dasharray="2 3"/>`);
  });
  return doc(width, height, out);
}

export function cdfChart(spec: CdfChartSpec): string {
  const width = spec.width ?? 960;
  const height = spec.height ?? 520;
  const legendW = 230;
  const m = { left: 70, right: 20 + legendW, top: spec.subtitle ? 70 : 50, bottom: 60 };
  const plotW = width - m.left - m.right;
  const plotH = height - m.top - m.bottom;
  const all = [...spec.series.flatMap((s) => s.points), ...(spec.markers ?? []).map((mk) => mk.value)].filter((v) => Number.isFinite(v) && v > 0);
  const scale = spec.logX
    ? logScale(all.length ? Math.min(...all) : 1, all.length ? Math.max(...all) : 10)
    : linearScale(all.length ? Math.max(...all) : 1);
  const x = (v: number): number => m.left + plotW * scale.map(v);
  const y = (f: number): number => m.top + plotH * (1 - f);
  const out: string[] = [];

  out.push(text(width / 2, 24, spec.title, 'font-size="18" font-weight="bold" text-anchor="middle"'));
  if (spec.subtitle) out.push(text(width / 2, 44, spec.subtitle, 'font-size="12" fill="#555" text-anchor="middle"'));

  for (const t of scale.ticks) {
    out.push(`<line x1="${r(x(t))}" y1="${m.top}" x2="${r(x(t))}" y2="${m.top + plotH}" stroke="#e5e5e5"/>`);
    out.push(text(x(t), m.top + plotH + 16, formatSi(t), 'font-size="11" text-anchor="middle" fill="#333"'));
  }
  for (const f of [0, 0.25, 0.5, 0.75, 0.9, 1]) {
    out.push(`<line x1="${m.left}" y1="${r(y(f))}" x2="${m.left + plotW}" y2="${r(y(f))}" stroke="#e5e5e5"/>`);
    out.push(text(m.left - 6, y(f) + 4, f.toFixed(2), 'font-size="11" text-anchor="end" fill="#333"'));
  }
  out.push(`<rect x="${m.left}" y="${m.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#333"/>`);
  out.push(text(m.left + plotW / 2, height - 16, spec.xLabel, 'font-size="12" text-anchor="middle"'));
  out.push(text(18, m.top + plotH / 2, "fraction of samples ≤ x", `font-size="12" text-anchor="middle" transform="rotate(-90 18 ${r(m.top + plotH / 2)})"`));

  for (const mk of spec.markers ?? []) {
    const mx = x(mk.value);
    out.push(`<line x1="${r(mx)}" y1="${m.top}" x2="${r(mx)}" y2="${m.top + plotH}" stroke="#000" stroke-width="1.5" stroke-dasharray="6 4"/>`);
    out.push(text(mx - 4, m.top + 14, mk.label, 'font-size="11" text-anchor="end" font-style="italic" fill="#000"'));
  }
  spec.series.forEach((s, i) => {
    const color = s.color ?? PALETTE[i % PALETTE.length];
    const pts = s.points
      .map((v, p) => (Number.isFinite(v) && v > 0 ? `${r(x(v))},${r(y(p / 100))}` : ""))
      .filter((p) => p !== "");
    if (pts.length > 0) {
      const dash = s.dash ? ` stroke-dasharray="${s.dash}"` : "";
      out.push(`<polyline points="${pts.join(" ")}" fill="none" stroke="${color}" stroke-width="2"${dash}><title>${escapeXml(s.label)}</title></polyline>`);
    }
    const ly = m.top + 10 + i * 18;
    const lx = width - legendW + 10;
    out.push(`<line x1="${lx}" y1="${ly}" x2="${lx + 24}" y2="${ly}" stroke="${color}" stroke-width="3"${s.dash ? ` stroke-dasharray="${s.dash}"` : ""}/>`);
    out.push(text(lx + 30, ly + 4, s.label, 'font-size="11" fill="#222"'));
  });
  return doc(width, height, out);
}
