/**
 * The live view. On a TTY: a table redrawn in place about 4 times a second (ANSI cursor-up and
 * clear-to-end; nothing else on screen is touched). Otherwise (CI, pipes): one plain progress
 * line every few seconds. Rates are measured over the last second of samples.
 */
import type { DemoStream } from "./host.js";
import type { ClientReport, Totals } from "./verdict.js";

const ESC = "\x1b[";
const HIDE_CURSOR = `${ESC}?25l`;
const SHOW_CURSOR = `${ESC}?25h`;
const green = (s: string): string => `${ESC}32m${s}${ESC}0m`;
const red = (s: string): string => `${ESC}31m${s}${ESC}0m`;
const dim = (s: string): string => `${ESC}2m${s}${ESC}0m`;

/** Counters that get a per-second rate column. */
const RATE_FIELDS = ["movesSent", "snapshots", "chatArrived", "relayArrived", "statesSent"] as const;
type RateField = (typeof RATE_FIELDS)[number];

/** Rate of a cumulative counter over a sliding window of samples. */
class RateMeter {
  #samples: { t: number; value: number }[] = [];
  constructor(private readonly windowMs: number) {}

  add(t: number, value: number): void {
    this.#samples.push({ t, value });
    while (this.#samples.length > 2 && t - this.#samples[1]!.t >= this.windowMs) this.#samples.shift();
  }

  perSecond(): number {
    const first = this.#samples[0];
    const last = this.#samples[this.#samples.length - 1];
    if (first === undefined || last === undefined || last.t <= first.t) return 0;
    return ((last.value - first.value) * 1000) / (last.t - first.t);
  }
}

export interface DashboardState {
  t: number;
  elapsedS: number;
  durationS: number;
  phase: string;
  reports: readonly ClientReport[];
  totals: Totals;
  bulk: string;
  proxy: string;
}

export function formatBits(bps: number): string {
  if (!Number.isFinite(bps) || bps <= 0) return "-";
  if (bps >= 1e9) return `${(bps / 1e9).toFixed(1)} Gb/s`;
  if (bps >= 1e6) return `${(bps / 1e6).toFixed(1)} Mb/s`;
  return `${(bps / 1e3).toFixed(0)} kb/s`;
}

export const fixed = (n: number, digits: number): string => (Number.isFinite(n) ? n.toFixed(digits) : "-");

/** A line as the terminal shows it (colour codes take no columns). */
const visible = (line: string): string => line.replace(/\x1b\[[0-9;?]*[a-zA-Z]/g, "");

/** A plain line broken at spaces into lines narrower than `columns`. */
function wrap(line: string, columns: number): string[] {
  const text = visible(line);
  if (text.length < columns) return [line];
  const out: string[] = [];
  let current = "";
  for (const word of text.split(" ")) {
    if (current.length > 0 && current.length + 1 + word.length >= columns) {
      out.push(current);
      current = `  ${word}`;
    } else current = current.length > 0 ? `${current} ${word}` : word;
  }
  out.push(current);
  return out;
}

export class Dashboard {
  readonly tty: boolean;
  #out: DemoStream;
  #title: string;
  #meters = new Map<string, RateMeter>();
  #linesDrawn = 0;
  #lastPlainAt = -Infinity;
  #plainEveryMs: number;

  constructor(out: DemoStream, title: string, plainEveryMs: number) {
    this.#out = out;
    this.tty = out.isTTY === true;
    this.#title = title;
    this.#plainEveryMs = plainEveryMs;
    if (this.tty) out.write(HIDE_CURSOR);
  }

  #rate(client: number, field: RateField, t: number, value: number): number {
    const id = `${client}:${field}`;
    let meter = this.#meters.get(id);
    if (meter === undefined) this.#meters.set(id, (meter = new RateMeter(1000)));
    meter.add(t, value);
    return meter.perSecond();
  }

  update(state: DashboardState): void {
    const rates = state.reports.map((r) => RATE_FIELDS.map((f) => this.#rate(r.index, f, state.t, r[f])));
    if (this.tty) this.#drawTable(state, rates);
    else if (state.t - this.#lastPlainAt >= this.#plainEveryMs) {
      this.#lastPlainAt = state.t;
      this.#out.write(`${this.#plainLine(state)}\n`);
    }
  }

  #plainLine(s: DashboardState): string {
    const n = s.reports.length;
    const avg = (f: (r: ClientReport) => number): number => s.reports.reduce((sum, r) => sum + f(r), 0) / Math.max(1, n);
    const moves = s.reports.reduce((a, r) => a + r.movesArrived, 0) / Math.max(1, s.reports.reduce((a, r) => a + r.movesSent, 0));
    return (
      `[${s.elapsedS.toFixed(1).padStart(5)}/${s.durationS} s ${s.phase}] ${n} clients, reliable ${s.totals.reliableArrived}/${s.totals.reliableSent} arrived, ` +
      `${s.totals.outOfOrder} out of order, movement ${(moves * 100).toFixed(1)}% arrived, rtt avg ${fixed(avg((r) => r.rttMs), 1)} ms, ` +
      `loss avg ${fixed(avg((r) => r.lossPercent), 1)}%, ${s.bulk}`
    );
  }

  #drawTable(s: DashboardState, rates: number[][]): void {
    const columns = this.#out.columns ?? 200;
    // The full table is ~100 columns; on a narrower terminal a compact one (the per-channel
    // rates but movement left out), so no number is ever cut off.
    const compact = columns < 110;
    const head = compact
      ? ["#", "rtt ms", "loss %", "bw est", "move/s", "resends", "reliable (arrived/sent)"]
      : ["#", "rtt ms", "loss %", "bw est", "move/s", "snap/s", "chat/s up", "chat/s dn", "state/s", "resends", "reliable (arrived/sent)"];
    const widths = compact ? [3, 6, 6, 9, 7, 11, 0] : [3, 6, 6, 9, 7, 7, 9, 9, 7, 11, 0];
    const cells = (values: string[]): string => values.map((v, i) => (widths[i]! > 0 ? v.padStart(widths[i]!) : ` ${v}`)).join(" ");
    const lines = [...wrap(this.#title, columns), `t = ${s.elapsedS.toFixed(1)} / ${s.durationS} s   [${s.phase}]`, dim(cells(head))];
    s.reports.forEach((r, i) => {
      const rate = rates[i]!;
      const bad = r.chatOutOfOrder + r.relayOutOfOrder + r.corrupt;
      const arrived = r.chatArrived + r.relayArrived;
      const sent = r.chatSent + r.relaySent;
      const reliable = bad > 0 ? red(`OUT OF ORDER/CORRUPT (${bad})`) : green(`in order ${arrived}/${sent}`);
      const rateCells = (compact ? rate.slice(0, 1) : rate).map((x) => x.toFixed(1));
      lines.push(cells([String(r.index), fixed(r.rttMs, 1), fixed(r.lossPercent, 1), formatBits(r.bandwidthBps), ...rateCells, `${r.resendsUp}/${r.resendsDown}`, reliable]));
    });
    lines.push(...wrap(`bulk   ${s.bulk}`, columns), ...wrap(`proxy  ${s.proxy}`, columns));
    // Anything still too wide (a terminal under ~70 columns) is clipped, so no line wraps and
    // the cursor-up count stays right (colour codes take no columns).
    const clipped = lines.map((l) => (visible(l).length >= columns ? visible(l).slice(0, columns - 1) : l));
    const up = this.#linesDrawn > 0 ? `${ESC}${this.#linesDrawn}A\r${ESC}J` : "";
    this.#out.write(`${up}${clipped.join("\n")}\n`);
    this.#linesDrawn = clipped.length;
  }

  /** Restores the cursor (TTY). Safe to call twice. */
  finish(): void {
    if (this.tty) this.#out.write(SHOW_CURSOR);
  }
}
