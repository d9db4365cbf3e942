// The Deno adapter keeps the engine's send order: Deno's un-awaited sends can leave out of
// order, so runtimes/deno awaits each send before the next. Bursts of numbered datagrams (each
// queued from one rewritten buffer, the second half of a burst queued while the first half is
// still being sent) must arrive complete, intact and in the order they were queued.
import { describe, expect, it } from "vitest";
import { join } from "node:path";
import { assertBuilt, FIXTURES, Peer } from "./helpers.js";

describe("deno send order", () => {
  it("bursts arrive complete, intact and in order", async () => {
    assertBuilt();
    const peer = new Peer("deno", join(FIXTURES, "deno-send-order.mjs"), [], 60_000);
    const line = await peer.waitFor("received", 55_000);
    peer.stop();
    expect(line).toEqual({ runtime: "deno", sent: 2000, received: 2000, outOfOrder: 0, corrupt: 0, sendFailures: 0 });
  }, 60_000);
});
