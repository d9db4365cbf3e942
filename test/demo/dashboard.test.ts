/** The live table fits the terminal: on 80 columns it cut numbers off mid-way (found by a review). */
import { describe, expect, it } from "vitest";
import { Dashboard, type DashboardState } from "../../demo/dashboard.js";
import type { ClientReport } from "../../demo/verdict.js";

const strip = (s: string): string => s.replace(/\x1b\[[0-9;?]*[a-zA-Z]/g, "");

function report(index: number): ClientReport {
  return {
    index, chatSent: 7200, chatArrived: 7199, chatOutOfOrder: 0, relaySent: 7201, relayArrived: 7201, relayOutOfOrder: 0,
    movesSent: 600, statesSent: 300, movesArrived: 570, snapshots: 600, stateKeys: 16, stateConverged: 16, corrupt: 0, stale: 0,
    rttMs: 81.25, lossPercent: 5.1, bandwidthBps: 12_300_000, resendsUp: 1234, resendsDown: 1187, disconnect: undefined, migrations: 1,
  };
}

function draw(columns: number): string[] {
  let text = "";
  const out = { isTTY: true, columns, write: (s: string) => ((text += s), true) };
  const title = "ackwire demo on node: 8 clients, loss 5%, RTT 80 ms, jitter 10 ms, 20 s, seed 123456";
  const d = new Dashboard(out, title, 1000);
  const state: DashboardState = {
    t: 1000, elapsedS: 12.5, durationS: 20, phase: "running", reports: [report(0), report(7)],
    totals: { reliableSent: 28802, reliableArrived: 28800, outOfOrder: 0, stateKeys: 32, stateConverged: 32, corrupt: 0, stale: 0 },
    bulk: "1 MiB transfer: 734 KiB of 1024 KiB verified at 1.7 MB/s", proxy: "proxy: 12345 datagrams, 617 dropped (5.0 %), 0 reordered",
  };
  d.update(state);
  d.finish();
  return strip(text).split("\n").filter((l) => l.length > 0);
}

describe("demo dashboard", () => {
  for (const columns of [80, 200]) {
    it(`fits ${columns} columns without cutting a number or a word`, () => {
      const lines = draw(columns);
      for (const l of lines) expect(l.length, l).toBeLessThan(columns);
      // Every figure whole (a long line may wrap at a space): the reliable count, the seed, the
      // bulk rate with its unit.
      const all = lines.join("\n").replace(/\n\s*/g, " ");
      expect(all).toContain("14400/14401");
      expect(all).toContain("seed 123456");
      expect(all).toContain("1.7 MB/s");
      expect(all).toContain("81.3");
    });
  }
});
