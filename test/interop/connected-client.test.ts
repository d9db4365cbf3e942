// A client's socket gets `peer` (OpenSocketOptions) and Node and Bun connect it to its server:
// datagrams from one rewritten buffer arrive intact, in order, from the client's own port; a
// send to any other address is counted as a failure and never reaches that address. Deno has
// no connected datagram socket: its adapter ignores `peer` and still sends anywhere.
import { describe, expect, it } from "vitest";
import { join } from "node:path";
import { assertBuilt, FIXTURES, Peer, type RuntimeName } from "./helpers.js";

async function run(runtime: RuntimeName, host: string, mode = "peer"): Promise<Record<string, unknown>> {
  assertBuilt();
  const peer = new Peer(runtime, join(FIXTURES, "connected-client.mjs"), [host, mode], 30_000);
  const line = await peer.waitFor(mode === "dead" ? "threw" : "received", 25_000);
  peer.stop();
  return line;
}

describe("connected client sockets", () => {
  // Node's adapter has its own in-process test (node-connected-client.test.ts).
  it("bun: sends reach only the peer, intact and in order (IPv4)", async () => {
    const r = await run("bun", "127.0.0.1");
    expect(r).toMatchObject({ runtime: "bun", received: 100, bad: [], sendFailures: 1, strayGot: 0 });
  }, 30_000);
  it("bun: the same over ::1", async () => {
    const r = await run("bun", "::1");
    expect(r).toMatchObject({ runtime: "bun", received: 100, bad: [], sendFailures: 1, strayGot: 0 });
  }, 30_000);
  it("bun: sends to a server that went away (ICMP port unreachable) are counted, never thrown", async () => {
    const r = await run("bun", "127.0.0.1", "dead");
    expect(r).toMatchObject({ runtime: "bun", threw: false });
    expect((r.sendFailures as number) + (r.receiveErrors as number)).toBeGreaterThan(0);
  }, 30_000);
  it("deno: peer is ignored, the socket sends anywhere", async () => {
    const r = await run("deno", "127.0.0.1");
    expect(r).toMatchObject({ runtime: "deno", received: 100, bad: [], sendFailures: 0, strayGot: 1 });
  }, 30_000);
});
