/**
 * The end-of-run summary: a per-client table, then one line per guarantee. The
 * `reliable messages:` and `RESULT:` lines have a fixed shape that test/demo parses.
 */
import { fixed, formatBits } from "./dashboard.js";
import type { DemoProxyStats } from "./proxy.js";
import type { BulkResult } from "./server.js";
import type { ClientReport, Totals } from "./verdict.js";

const pct = (part: number, whole: number): string => (whole > 0 ? `${((part * 100) / whole).toFixed(1)}%` : "-");

export interface SummaryInput {
  title: string;
  reports: readonly ClientReport[];
  totals: Totals;
  bulkExpected: boolean;
  bulk: BulkResult | undefined;
  bulkReceipt: boolean | undefined;
  proxy: DemoProxyStats;
  reasons: readonly string[];
  trafficS: number;
  drainS: number;
  /** The NAT rebinding, if the run had one. */
  rebinding: string | undefined;
}

export function formatSummary(s: SummaryInput): string {
  const head = ["client", "chat up", "chat down", "move up (arrived)", "snapshots", "state keys", "rtt ms", "loss %", "bw est", "resends up/dn"];
  const widths = [6, 11, 11, 18, 10, 11, 7, 7, 10, 14];
  const row = (values: string[]): string => values.map((v, i) => v.padStart(widths[i]!)).join(" ");
  const lines = ["", `=== ${s.title}: summary ===`, row(head)];
  for (const r of s.reports) {
    lines.push(
      row([
        String(r.index),
        `${r.chatArrived}/${r.chatSent}`,
        `${r.relayArrived}/${r.relaySent}`,
        `${r.movesArrived}/${r.movesSent} ${pct(r.movesArrived, r.movesSent)}`,
        String(r.snapshots),
        `${r.stateConverged}/${r.stateKeys}`,
        fixed(r.rttMs, 1),
        fixed(r.lossPercent, 1),
        formatBits(r.bandwidthBps),
        `${r.resendsUp}/${r.resendsDown}`,
      ]),
    );
  }
  const t = s.totals;
  const lost = Math.max(0, t.reliableSent - t.reliableArrived);
  lines.push(
    "",
    `traffic ${s.trafficS.toFixed(1)} s, then ${s.drainS.toFixed(1)} s until every reliable message was accounted for`,
    `reliable messages: sent ${t.reliableSent}, arrived ${t.reliableArrived}, in order ${t.reliableArrived - t.outOfOrder}, lost ${lost}, out of order ${t.outOfOrder}`,
  );
  if (s.bulkExpected) {
    const b = s.bulk;
    const receipt = s.bulkReceipt === undefined ? "no receipt yet" : s.bulkReceipt ? "receipt: delivered" : "receipt: LOST";
    lines.push(
      b === undefined
        ? `1 MiB transfer: client 0 -> server NOT COMPLETED (${receipt})`
        : `1 MiB transfer: client 0 -> server, ${b.bytes} bytes, SHA-256 ${b.verified ? "verified" : "MISMATCH"} (${b.digest}...), complete at ${(b.arrivedAtMs / 1000).toFixed(2)} s (${receipt})`,
    );
  }
  lines.push(
    `latest-state: ${t.stateConverged}/${t.stateKeys} keys converged to each client's latest value`,
    `self-checks: ${t.corrupt} corrupt payloads, ${t.stale} stale sequenced deliveries`,
    `impairment proxy: to server ${s.proxy.toUpstream.lost}/${s.proxy.toUpstream.sent} datagrams dropped (${pct(s.proxy.toUpstream.lost, s.proxy.toUpstream.sent)}), ` +
      `to clients ${s.proxy.toClient.lost}/${s.proxy.toClient.sent} (${pct(s.proxy.toClient.lost, s.proxy.toClient.sent)})`,
  );
  if (s.rebinding !== undefined) lines.push(s.rebinding);
  if (s.reasons.length === 0) lines.push("RESULT: PASS - every reliable message arrived exactly once and in order");
  else lines.push(`RESULT: FAIL - ${s.reasons.length} problem(s):`, ...s.reasons.map((r) => `  - ${r}`));
  return `${lines.join("\n")}\n`;
}
