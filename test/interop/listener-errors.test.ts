// A "message" listener that throws, on Node, Bun and Deno (fixtures/listener-errors.mjs): the
// server's "error" listener gets each error, the server keeps echoing, and with no "error"
// listener the errors are printed to stderr while the process runs on (none reaches the
// runtime's unhandled-error path, which would end a Bun or Deno process and a Node one without
// an uncaughtException handler).
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { assertBuilt, FIXTURES, Peer, RUNTIMES } from "./helpers.js";

interface Run {
  errors: string[];
  echoes: number[];
  open: boolean;
}

describe("a throwing listener keeps the server up", () => {
  for (const runtime of RUNTIMES) {
    it(`${runtime}: errors reach the error event, else stderr; the echo goes on`, async () => {
      assertBuilt();
      const peer = new Peer(runtime, join(FIXTURES, "listener-errors.mjs"), [], 30_000);
      expect((await peer.waitFor("runtime", 20_000)).runtime).toBe(runtime);
      const r = (await peer.waitFor("uncaught", 25_000)) as unknown as { handled: Run; unhandled: Run; uncaught: number };
      expect(await peer.exited(5000)).toBe(0);
      const context = JSON.stringify(r) + peer.stderr.join("").slice(-1500);
      const all = [0, 1, 2, 3, 4, 5, 6, 7];
      expect(r.handled, context).toEqual({ errors: [0, 2, 4, 6].map((n) => `ERR_LISTENER:message:bug on ${n}`), echoes: all, open: true });
      expect(r.unhandled, context).toEqual({ errors: [], echoes: all, open: true });
      expect(r.uncaught, context).toBe(0);
      const stderr = peer.stderr.join("");
      expect(stderr.split("ackwire: unhandled error in an application callback").length - 1, context).toBe(4);
      expect(stderr, context).toContain("bug on 6");
    }, 40_000);
  }
});
