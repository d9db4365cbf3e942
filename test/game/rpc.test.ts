/**
 * RPC: the codec, two peers wired back to back on a virtual clock, the peer over the sans-IO
 * Endpoint on the simulator (with loss), and once over real loopback sockets on Node.
 */
import { describe, expect, it, vi } from "vitest";
import { ByteReader } from "../../src/game/bytes.js";
import { decodeValue, encodeValue } from "../../src/game/codec.js";
import { RpcPeer, type RpcHandler, type RpcOptions } from "../../src/game/rpc.js";
import { attachRpc } from "../../src/game/rpc-connection.js";
import { ModuleTimer } from "../../src/game/timer.js";
import { Rng } from "../../src/sim/rng.js";
import { connectPair, endpointPair, settle } from "./helpers.js";

describe("codec", () => {
  it("round-trips every kind of value", () => {
    const values = [
      null,
      true,
      false,
      0,
      127,
      128,
      2 ** 40 + 3,
      Number.MAX_SAFE_INTEGER,
      -1,
      -129,
      Number.MIN_SAFE_INTEGER,
      1.5,
      -0,
      NaN,
      Infinity,
      2 ** 60,
      "",
      "héllo ✓ 🎮",
      new Uint8Array([0, 1, 255]),
      [1, "two", [3, null]],
      { a: 1, b: { c: [true, new Uint8Array(3)] }, "": "empty key" },
    ];
    for (const v of values) expect(decodeValue(encodeValue(v))).toEqual(v);
    expect(Object.is(decodeValue(encodeValue(-0)), -0)).toBe(true);
    // Small integers are one tag byte plus one byte.
    expect(encodeValue(42).length).toBe(2);
  });

  it("keeps a __proto__ key as a plain field", () => {
    const bytes = encodeValue(JSON.parse('{"__proto__": {"polluted": 1}}'));
    const out = decodeValue(bytes) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.hasOwn(out, "__proto__")).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("refuses values it cannot carry, with a typed error", () => {
    expect(() => encodeValue(() => 1)).toThrow(expect.objectContaining({ code: "ERR_GAME_CODEC" }));
    const cyclic: unknown[] = [];
    cyclic.push(cyclic);
    expect(() => encodeValue(cyclic)).toThrow(expect.objectContaining({ code: "ERR_GAME_CODEC" }));
  });

  it("refuses objects that are not plain (Map, Set, Date, buffers, typed arrays, class instances)", () => {
    class Vec {
      constructor(
        public x = 1,
        public y = 2,
      ) {}
    }
    const refused: [string, unknown][] = [
      ["Map", new Map([["a", 1]])],
      ["Set", new Set([1])],
      ["Date", new Date(0)],
      ["ArrayBuffer", new ArrayBuffer(4)],
      ["DataView", new DataView(new ArrayBuffer(4))],
      ["Float32Array", new Float32Array([1.5])],
      ["Int16Array", new Int16Array([1])],
      ["Uint8ClampedArray", new Uint8ClampedArray([1])],
      ["RegExp", /x/],
      ["Promise", Promise.resolve(1)],
      ["Error", new Error("x")],
      ["a class instance", new Vec()],
      ["a Map inside an object", { inventory: new Map() }],
      ["a Date inside an array", [1, new Date(0)]],
    ];
    for (const [what, value] of refused) expect(() => encodeValue(value), what).toThrow(expect.objectContaining({ code: "ERR_GAME_CODEC" }));
    // Plain objects, including null-prototype ones, and Uint8Array subclasses (Node's Buffer) pass.
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { a: 1 });
    expect(decodeValue(encodeValue(bare))).toEqual({ a: 1 });
    class Bytes extends Uint8Array {}
    expect(decodeValue(encodeValue(new Bytes([1, 2])))).toEqual(new Uint8Array([1, 2]));
  });

  it("never throws on random or truncated input (seed 11)", () => {
    const rng = new Rng(11);
    const sample = encodeValue({ list: [1, -2, 3.5, "x", new Uint8Array(4)], nested: { deep: [[[]]] } });
    let rejected = 0;
    for (let i = 0; i < 3000; i++) {
      const bytes = i % 2 === 0 ? sample.slice(0, rng.int(sample.length)) : Uint8Array.from({ length: rng.int(40) }, () => rng.int(256));
      if (i % 3 === 0 && bytes.length > 0) bytes[rng.int(bytes.length)] = 0x08; // array tags with huge counts
      expect(() => decodeValue(bytes), "seed 11").not.toThrow();
      if (decodeValue(bytes) === undefined) rejected++;
    }
    expect(rejected).toBeGreaterThan(1000);
  });
});

/** Two peers whose sends are queued and delivered by `pump()`, on a shared virtual clock. */
function backToBack(a: Partial<RpcOptions>, b: Partial<RpcOptions>) {
  const clock = { now: 0 };
  const toB: Uint8Array[] = [];
  const toA: Uint8Array[] = [];
  const peerA = new RpcPeer({ send: (d) => toB.push(d), now: () => clock.now, ...a });
  const peerB = new RpcPeer({ send: (d) => toA.push(d), now: () => clock.now, ...b });
  const pump = async () => {
    for (let i = 0; i < 50 && (toA.length > 0 || toB.length > 0); i++) {
      for (const d of toB.splice(0)) peerB.receive(d);
      for (const d of toA.splice(0)) peerA.receive(d);
      await settle();
    }
  };
  return { clock, peerA, peerB, pump, toA, toB };
}

describe("RpcPeer back to back", () => {
  const handlers: Record<string, RpcHandler> = {
    add: (p) => (p as number[])[0]! + (p as number[])[1]!,
    echo: async (p) => p,
    fail: () => {
      throw Object.assign(new Error("no such unit"), { code: "E_UNIT" });
    },
    never: () => new Promise(() => undefined),
  };

  it("close() tells the remote: its calls to us get ERR_RPC_CLOSED at once, ours are cancelled there, and notification handlers' signals abort", async () => {
    let notifySignal: AbortSignal | undefined;
    const running: AbortSignal[] = [];
    const { peerA, peerB, pump } = backToBack(
      { handlers: { wait: (_p, ctx) => (running.push(ctx.signal), new Promise(() => undefined)) } },
      { handlers: { never: (_p, ctx) => (running.push(ctx.signal), new Promise(() => undefined)), hello: (_p, ctx) => ((notifySignal = ctx.signal), new Promise(() => undefined)) } },
    );
    const mine = peerA.call("never", null, { timeoutMs: 60_000 }).catch((e: unknown) => e);
    const theirs = peerB.call("wait", null, { timeoutMs: 60_000 }).catch((e: unknown) => e);
    peerA.notify("hello");
    await pump();
    expect(running).toHaveLength(2);
    peerB.close("leaving");
    await pump();
    // A's call into B: answered ERR_RPC_CLOSED by B as it closed, not left to its minute.
    expect(await mine).toMatchObject({ code: "ERR_RPC_REMOTE", remoteCode: "ERR_RPC_CLOSED" });
    // B's call into A: rejected locally, and cancelled at A (A's handler saw its signal abort).
    expect(await theirs).toMatchObject({ code: "ERR_RPC_CLOSED" });
    expect(running.map((s) => s.aborted)).toEqual([true, true]);
    expect(peerA.runningHandlers).toBe(0);
    expect(notifySignal?.aborted).toBe(true);
  });

  it("answers calls, concurrently and out of order, and carries remote errors typed", async () => {
    const slow: RpcHandler = (p) => new Promise((r) => setTimeout(() => r(p), 5));
    const { peerA, pump } = backToBack({}, { handlers: { ...handlers, slow } });
    const first = peerA.call("slow", "first");
    const second = peerA.call("add", [2, 3]);
    await pump();
    await expect(second).resolves.toBe(5); // answered while "slow" still runs
    await new Promise((r) => setTimeout(r, 10));
    await pump();
    await expect(first).resolves.toBe("first");
    const echoed = peerA.call("echo", { bytes: new Uint8Array([9]) });
    const failing = peerA.call("fail");
    const unknown = peerA.call("nope");
    await pump();
    // An async handler's answer, with bytes inside the payload, comes back intact.
    await expect(echoed).resolves.toEqual({ bytes: new Uint8Array([9]) });
    await expect(failing).rejects.toMatchObject({ code: "ERR_RPC_REMOTE", remoteCode: "E_UNIT" });
    await expect(unknown).rejects.toMatchObject({ code: "ERR_RPC_REMOTE", remoteCode: "ERR_RPC_UNKNOWN_METHOD" });
  });

  it("times out on the virtual clock, cancels the handler, drops the late answer", async () => {
    let handlerSignal: { aborted: boolean } | undefined;
    const { clock, peerA, peerB, pump } = backToBack(
      { defaultTimeoutMs: 100 },
      {
        handlers: {
          never: (_p, ctx) => {
            handlerSignal = ctx.signal;
            return new Promise(() => undefined);
          },
        },
      },
    );
    const call = peerA.call("never");
    await pump();
    expect(peerA.pollTimeout()).toBe(100);
    clock.now = 99;
    peerA.handleTimeout(clock.now);
    expect(peerA.inFlight).toBe(1);
    clock.now = 100;
    peerA.handleTimeout(clock.now);
    await expect(call).rejects.toMatchObject({ code: "ERR_RPC_TIMEOUT" });
    await pump(); // the CANCEL reaches B
    expect(handlerSignal?.aborted).toBe(true);
    expect(peerB.runningHandlers).toBe(0);
    expect(peerA.counters.timeouts).toBe(1);
  });

  it("cancels with an AbortSignal, before and during the call", async () => {
    const { peerA, peerB, pump } = backToBack({}, { handlers });
    const controller = new AbortController();
    const call = peerA.call("never", null, { signal: controller.signal });
    await pump();
    expect(peerB.runningHandlers).toBe(1);
    controller.abort();
    await expect(call).rejects.toMatchObject({ code: "ERR_RPC_ABORTED" });
    await pump();
    expect(peerB.runningHandlers).toBe(0);
    await expect(peerA.call("add", [1, 1], { signal: controller.signal })).rejects.toMatchObject({ code: "ERR_RPC_ABORTED" });
  });

  it("limits concurrency on both sides", async () => {
    const { peerA, pump } = backToBack({ maxInFlight: 3 }, { handlers });
    const calls = [peerA.call("never"), peerA.call("never"), peerA.call("never")];
    await expect(peerA.call("add", [1, 2])).rejects.toMatchObject({ code: "ERR_RPC_BUSY" });
    await pump();
    expect(peerA.inFlight).toBe(3);
    peerA.close("test over");
    for (const c of calls) await expect(c).rejects.toMatchObject({ code: "ERR_RPC_CLOSED" });

    const server = backToBack({}, { handlers, maxConcurrentHandlers: 2 });
    const many = [1, 2, 3, 4].map(() => server.peerA.call("never"));
    many.forEach((p) => p.catch(() => undefined)); // the two running ones are never answered
    await server.pump();
    expect(server.peerB.runningHandlers).toBe(2);
    expect(server.peerB.counters.busyRefused).toBe(2);
    await expect(many[2]).rejects.toMatchObject({ remoteCode: "ERR_RPC_BUSY" });
    await expect(many[3]).rejects.toMatchObject({ remoteCode: "ERR_RPC_BUSY" });
    server.peerA.close();
  });

  it("delivers notifications one way, and counts malformed messages", async () => {
    const seen: unknown[] = [];
    const { peerA, peerB, pump, toA } = backToBack({}, { handlers: { chat: (p) => void seen.push(p) } });
    peerA.notify("chat", "gg");
    peerA.notify("unknown", 1);
    await pump();
    expect(seen).toEqual(["gg"]);
    expect(toA.length).toBe(0); // nothing comes back
    for (const junk of [new Uint8Array(0), new Uint8Array([1]), new Uint8Array([3, 1, 0x0a]), new Uint8Array([9, 9, 9]), new Uint8Array([2, 300])]) peerB.receive(junk);
    expect(peerB.counters.malformed).toBe(5);
  });

  it("rejects oversized messages with a typed error", async () => {
    const { peerA } = backToBack({ maxMessageBytes: 100 }, {});
    await expect(peerA.call("echo", new Uint8Array(200))).rejects.toMatchObject({ code: "ERR_GAME_MESSAGE_TOO_LARGE" });
    expect(peerA.inFlight).toBe(0);
  });
});

describe("RpcPeer over the sans-IO Endpoint (simulated network)", () => {
  for (const seed of [21, 22]) {
    it(`answers 200 calls exactly once under 10% loss (seed ${seed})`, async () => {
      const pair = endpointPair(seed, { link: { latencyMs: 20, jitterMs: 5, lossRate: 0.1 } });
      const [c, s] = connectPair(pair);
      const client = new RpcPeer({ send: (d) => pair.client.send(c, d, { channel: 0 }), now: () => pair.now, defaultTimeoutMs: 20_000, maxInFlight: 256 });
      let handled = 0;
      const server = new RpcPeer({
        send: (d) => pair.server.send(s, d, { channel: 0 }),
        now: () => pair.now,
        maxConcurrentHandlers: 256,
        handlers: { square: (p) => (handled++, (p as number) * (p as number)) },
      });
      const results = new Map<number, number>();
      const failures: unknown[] = [];
      for (let i = 0; i < 200; i++) client.call("square", i).then((v) => results.set(i, v as number), (e: unknown) => failures.push(e));
      for (let round = 0; round < 3000 && results.size < 200; round++) {
        pair.drive({ maxTimeMs: 5, maxSteps: 10_000 });
        for (const ev of pair.serverEvents()) if (ev.type === "message" && ev.channel === 0) server.receive(ev.data);
        for (const ev of pair.clientEvents()) if (ev.type === "message" && ev.channel === 0) client.receive(ev.data);
        client.handleTimeout(pair.now);
        await settle();
      }
      expect(failures, `seed ${seed}`).toEqual([]);
      expect(results.size, `seed ${seed}`).toBe(200);
      for (const [i, v] of results) expect(v).toBe(i * i);
      expect(handled).toBe(200);
      expect(pair.toServer.stats.lost + pair.toClient.stats.lost, `seed ${seed}: the link should have lost packets`).toBeGreaterThan(0);
      expect(client.counters.malformed + server.counters.malformed).toBe(0);
    });
  }
});

describe("attachRpc over real loopback sockets (Node)", () => {
  it("calls both ways, remote error, notification, closes with the connection", async () => {
    const { listen, connect } = await import("../../runtimes/node/index.js");
    const protocolId = 0x52504331;
    const server = await listen({ port: 0, host: "127.0.0.1", protocolId });
    const notes: unknown[] = [];
    const serverSide = new Promise<ReturnType<typeof attachRpc>>((resolve) => {
      server.on("connection", (conn) => {
        resolve(
          attachRpc(conn, {
            handlers: {
              hello: (name) => `hello ${String(name)}`,
              boom: () => {
                throw Object.assign(new Error("bad"), { code: "E_BAD" });
              },
              note: (p) => void notes.push(p),
            },
          }),
        );
      });
    });
    try {
      const conn = await connect(`127.0.0.1:${server.address.port}`, { protocolId });
      const rpc = attachRpc(conn, { handlers: { whoami: () => "client" }, defaultTimeoutMs: 2000 });
      expect(await rpc.call("hello", "node")).toBe("hello node");
      const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => rpc.call("hello", i)));
      expect(answers).toEqual(Array.from({ length: 50 }, (_, i) => `hello ${i}`));
      await expect(rpc.call("boom")).rejects.toMatchObject({ code: "ERR_RPC_REMOTE", remoteCode: "E_BAD" });
      const srv = await serverSide;
      expect(await srv.call("whoami")).toBe("client");
      rpc.notify("note", { n: 1 });
      expect(await rpc.call("hello", "after note")).toBe("hello after note"); // ordered channel: note came first
      expect(notes).toEqual([{ n: 1 }]);
      const hanging = srv.call("never-answered-because-closed", null, { timeoutMs: 10_000 }).catch((e: unknown) => e);
      await conn.close();
      expect(await hanging).toMatchObject({ code: expect.stringMatching(/ERR_RPC_(CLOSED|REMOTE)/) });
      await expect(rpc.call("hello")).rejects.toMatchObject({ code: "ERR_RPC_CLOSED" });
    } finally {
      await server.close();
    }
  });
});

describe("RpcPeer: its own sends never throw out of it", () => {
  /** A send that throws like the transport does for a message over the channel's limit. */
  const refusing = (limit: number, deliver: (d: Uint8Array) => void) => (d: Uint8Array) => {
    if (d.length > limit) throw Object.assign(new Error(`message of ${d.length} bytes exceeds the channel's maxMessageBytes (${limit})`), { code: "ERR_MESSAGE_TOO_LARGE" });
    deliver(d);
  };

  it("an answer the send refuses goes back as an ERR_RPC_HANDLER error answer", async () => {
    const toA: Uint8Array[] = [];
    const peerB = new RpcPeer({ send: refusing(300, (d) => toA.push(d)), now: () => 0, handlers: { big: () => new Uint8Array(500), small: () => 7 } });
    const peerA = new RpcPeer({ send: (d) => peerB.receive(d), now: () => 0 });
    const outcome = peerA.call("big").then(
      (v) => ({ ok: v }),
      (e: unknown) => ({ error: e }),
    );
    const small = peerA.call("small");
    for (let i = 0; i < 10; i++) {
      await settle();
      for (const d of toA.splice(0)) peerA.receive(d);
    }
    expect(peerA.inFlight, "both calls got an answer").toBe(0);
    const { error } = (await outcome) as { error: { code: string; remoteCode: string; message: string } };
    expect(error).toMatchObject({ code: "ERR_RPC_REMOTE", remoteCode: "ERR_RPC_HANDLER" });
    expect(error.message).toContain("the result could not be sent: message of");
    await expect(small).resolves.toBe(7);
    expect(peerB.counters.sendFailures).toBe(0); // the error answer went out instead
  });

  it("answers, error answers and cancels that cannot be sent at all are counted and dropped", async () => {
    const broken = () => {
      throw Object.assign(new Error("channel 9 is not configured"), { code: "ERR_UNKNOWN_CHANNEL" });
    };
    const server = new RpcPeer({ send: broken, now: () => 0, maxConcurrentHandlers: 2, handlers: { echo: async (p) => p, hang: () => new Promise(() => undefined) } });
    const requests: Uint8Array[] = [];
    const client = new RpcPeer({ send: (d) => requests.push(d), now: () => 0, maxInFlight: 8 });
    for (const m of ["echo", "nope", "hang", "echo"]) client.call(m).catch(() => undefined);
    // echo (its answer, then its error answer, fail), nope (unknown method: error answer fails),
    // hang (runs), echo (refused busy: error answer fails). receive() must not throw.
    expect(() => {
      for (const r of requests) server.receive(r);
    }).not.toThrow();
    await settle();
    expect(server.counters.sendFailures).toBe(3);
    expect(server.counters.busyRefused).toBe(1);

    // A timeout's CANCEL that cannot be sent: the call still rejects, handleTimeout() does not throw.
    let failCancel = false;
    const clock = { now: 0 };
    const caller = new RpcPeer({ send: (d) => (failCancel && d[0] === 5 ? broken() : undefined), now: () => clock.now, defaultTimeoutMs: 50 });
    const call = caller.call("anything");
    failCancel = true;
    clock.now = 50;
    expect(() => caller.handleTimeout(clock.now)).not.toThrow();
    await expect(call).rejects.toMatchObject({ code: "ERR_RPC_TIMEOUT" });
    expect(caller.counters.sendFailures).toBe(1);
    // And a CANCEL from an AbortSignal.
    const controller = new AbortController();
    const aborted = caller.call("anything", null, { signal: controller.signal });
    expect(() => controller.abort()).not.toThrow();
    await expect(aborted).rejects.toMatchObject({ code: "ERR_RPC_ABORTED" });
    expect(caller.counters.sendFailures).toBe(2);
  });

  it("a call whose request cannot be sent rejects at once with that error and frees its slot", async () => {
    const peer = new RpcPeer({ send: refusing(50, () => undefined), now: () => 0, maxInFlight: 1 });
    await expect(peer.call("upload", new Uint8Array(100))).rejects.toMatchObject({ code: "ERR_MESSAGE_TOO_LARGE" });
    expect(peer.inFlight).toBe(0);
    expect(peer.pollTimeout()).toBeUndefined();
    // The slot is free: the next call is sent, not refused as busy.
    const next = peer.call("small", 1);
    expect(peer.inFlight).toBe(1);
    peer.close();
    await expect(next).rejects.toMatchObject({ code: "ERR_RPC_CLOSED" });
  });
});

describe("RpcPeer: timeouts, call ids, handler signals", () => {
  it("a bad timeoutMs rejects the call (never throws); at most 2^31-1 ms", async () => {
    const peer = new RpcPeer({ send: () => undefined, now: () => 0 });
    for (const timeoutMs of [0, -1, NaN, Infinity, 2 ** 31, 3e9]) {
      let result: Promise<unknown> | undefined;
      expect(() => (result = peer.call("m", null, { timeoutMs })), `timeoutMs ${timeoutMs}`).not.toThrow();
      await expect(result, `timeoutMs ${timeoutMs}`).rejects.toMatchObject({ code: "ERR_GAME_USAGE" });
    }
    expect(peer.inFlight).toBe(0);
    const longest = peer.call("m", null, { timeoutMs: 2 ** 31 - 1 });
    expect(peer.pollTimeout()).toBe(2 ** 31 - 1);
    peer.close();
    await expect(longest).rejects.toMatchObject({ code: "ERR_RPC_CLOSED" });
    expect(() => new RpcPeer({ send: () => undefined, now: () => 0, defaultTimeoutMs: 2 ** 31 })).toThrow(expect.objectContaining({ code: "ERR_GAME_USAGE" }));
  });

  it("ModuleTimer never arms a host timer past 2^31-1 ms (it would fire at once, in a loop)", () => {
    const delays: number[] = [];
    const spy = vi.spyOn(globalThis, "setTimeout").mockImplementation(((_fn: () => void, ms?: number) => {
      delays.push(ms ?? 0);
      return 0 as unknown as ReturnType<typeof setTimeout>;
    }) as typeof setTimeout);
    try {
      const timer = new ModuleTimer({ pollTimeout: () => performance.now() + 3e9, handleTimeout: () => undefined });
      timer.poke();
      timer.stop();
    } finally {
      spy.mockRestore();
    }
    expect(delays.length).toBe(1);
    expect(delays[0]).toBeLessThanOrEqual(2 ** 31 - 1);
    expect(delays[0]).toBeGreaterThan(2 ** 30);
  });

  it("each peer starts its call ids at its own point, so a closed peer's late answer matches nothing", async () => {
    const firstIds = new Set<number>();
    for (let i = 0; i < 8; i++) {
      let sent: Uint8Array | undefined;
      const peer = new RpcPeer({ send: (d) => (sent = d), now: () => 0 });
      peer.call("m").catch(() => undefined);
      peer.close();
      const r = new ByteReader(sent!);
      r.u8();
      firstIds.add(r.varuint());
    }
    expect(firstIds.size).toBeGreaterThan(1);

    // The scenario: peer 1 calls and closes, peer 2 (same channel) calls; peer 1's answer comes in.
    const toServer: Uint8Array[] = [];
    const old = new RpcPeer({ send: (d) => toServer.push(d), now: () => 0 });
    old.call("who", "old").catch(() => undefined);
    old.close("detached");
    const fresh = new RpcPeer({ send: (d) => toServer.push(d), now: () => 0 });
    const mine = fresh.call("who", "fresh");
    const answers: Uint8Array[] = [];
    const srv = new RpcPeer({ send: (d) => answers.push(d), now: () => 0, handlers: { who: (p) => p } });
    // toServer: the old request, the old peer's CANCEL (close() sends one), the fresh request.
    // The CANCEL crossed the old answer on the way: the server answered before it arrived.
    expect(toServer).toHaveLength(3);
    srv.receive(toServer[0]!);
    await settle();
    srv.receive(toServer[2]!);
    await settle();
    srv.receive(toServer[1]!); // late: its call is finished, nothing to stop
    expect(answers.length).toBe(2);
    fresh.receive(answers[0]!); // the old peer's answer
    expect(fresh.counters.lateAnswers).toBe(1);
    fresh.receive(answers[1]!);
    await expect(mine).resolves.toBe("fresh");
  });

  it("a handler's ctx.signal is a real AbortSignal, aborted by the caller's cancel", async () => {
    let signal: AbortSignal | undefined;
    let noteSignal: AbortSignal | undefined;
    const { peerA, peerB, pump } = backToBack(
      {},
      {
        handlers: {
          hang: (_p, ctx) => {
            signal = ctx.signal as AbortSignal;
            return new Promise(() => undefined);
          },
          note: (_p, ctx) => void (noteSignal = ctx.signal as AbortSignal),
        },
      },
    );
    const controller = new AbortController();
    const call = peerA.call("hang", null, { signal: controller.signal });
    peerA.notify("note");
    await pump();
    expect(signal).toBeInstanceOf(AbortSignal);
    expect(noteSignal).toBeInstanceOf(AbortSignal);
    expect(() => signal!.throwIfAborted()).not.toThrow();
    let fired = 0;
    signal!.addEventListener("abort", () => fired++);
    controller.abort();
    await expect(call).rejects.toMatchObject({ code: "ERR_RPC_ABORTED" });
    await pump();
    expect(signal!.aborted).toBe(true);
    expect(fired).toBe(1);
    expect(signal!.reason).toBe("cancelled by the caller");
    expect(() => signal!.throwIfAborted()).toThrow();
    expect(peerB.runningHandlers).toBe(0);
  });
});

describe("attachRpc: channel checks and re-attaching (Node, loopback)", () => {
  it("fails a call whose answer is over the channel's maxMessageBytes (the server lives on), and frees a refused request's slot", async () => {
    const { listen, connect } = await import("../../runtimes/node/index.js");
    const protocolId = 0x52504332;
    const channels = [{ mode: "reliable-ordered" as const, maxMessageBytes: 1000 }];
    const server = await listen({ port: 0, host: "127.0.0.1", protocolId, channels });
    let serverPeer: ReturnType<typeof attachRpc> | undefined;
    server.on("connection", (conn) => {
      serverPeer = attachRpc(conn, { handlers: { big: (n) => new Uint8Array(n as number), hang: () => new Promise(() => undefined) } });
    });
    try {
      const conn = await connect(`127.0.0.1:${server.address.port}`, { protocolId, channels });
      const rpc = attachRpc(conn, { defaultTimeoutMs: 3000, maxInFlight: 1 });
      expect((await rpc.call("big", 10)) as Uint8Array).toHaveLength(10);
      const error = await rpc.call("big", 2000).catch((e: unknown) => e as { code: string; remoteCode: string; message: string });
      expect(error).toMatchObject({ code: "ERR_RPC_REMOTE", remoteCode: "ERR_RPC_HANDLER" });
      expect((error as Error).message).toContain("could not be sent");
      await expect(rpc.call("big", new Uint8Array(2000))).rejects.toMatchObject({ code: "ERR_MESSAGE_TOO_LARGE" });
      expect(rpc.peer.inFlight).toBe(0);
      expect((await rpc.call("big", 20)) as Uint8Array).toHaveLength(20); // the slot was freed at once
      expect(serverPeer!.peer.counters.sendFailures).toBe(0);
      await conn.close();
    } finally {
      await server.close();
    }
  });

  it("refuses a channel the connection does not have, and a second peer on an attached channel; detach() cancels its calls at the remote; a re-attached peer gets its own answers", async () => {
    const { listen, connect } = await import("../../runtimes/node/index.js");
    const protocolId = 0x52504333;
    const server = await listen({ port: 0, host: "127.0.0.1", protocolId });
    const slowAborted: boolean[] = [];
    server.on("connection", (conn) => {
      attachRpc(conn, {
        handlers: {
          slow: (_params, ctx) =>
            new Promise((resolve) =>
              setTimeout(() => {
                slowAborted.push(ctx.signal.aborted);
                resolve({ match: "found" });
              }, 100),
            ),
          balance: () => ({ gold: 42 }),
        },
      });
    });
    try {
      const conn = await connect(`127.0.0.1:${server.address.port}`, { protocolId });
      for (const channel of [8, 99, -1, 1.5]) expect(() => attachRpc(conn, { channel }), `channel ${channel}`).toThrow(expect.objectContaining({ code: "ERR_GAME_USAGE" }));
      const lobby = attachRpc(conn);
      expect(() => attachRpc(conn), "a second peer on channel 0").toThrow(expect.objectContaining({ code: "ERR_GAME_USAGE" }));
      const other = attachRpc(conn, { channel: 3 }); // another channel is fine
      other.detach();
      const waiting = lobby.call("slow").catch((e: unknown) => e);
      lobby.detach();
      expect(await waiting).toMatchObject({ code: "ERR_RPC_CLOSED" });
      const game = attachRpc(conn);
      expect(await game.call("balance")).toEqual({ gold: 42 });
      await new Promise((r) => setTimeout(r, 200)); // the old call's handler ends meanwhile
      expect(await game.call("balance")).toEqual({ gold: 42 });
      // detach() sent a CANCEL: the server's handler saw its signal aborted, and its result
      // went nowhere (no late answer reached the new peer either).
      expect(slowAborted).toEqual([true]);
      expect(game.peer.counters.lateAnswers).toBe(0);
      // A peer closed by its own close() (not detach()) frees the channel too.
      game.peer.close();
      const again = attachRpc(conn);
      expect(await again.call("balance")).toEqual({ gold: 42 });
      const closing = conn.close();
      // While the connection closes (lingering), a new attach is closed at once, not refused.
      const late = attachRpc(conn, { channel: 3 });
      await expect(late.call("balance")).rejects.toMatchObject({ code: "ERR_RPC_CLOSED" });
      expect(() => attachRpc(conn)).not.toThrow();
      await closing;
      // An ended connection: the peer is closed at once, calls reject rather than time out.
      const ended = attachRpc(conn);
      await expect(ended.call("balance", null, { timeoutMs: 2000 })).rejects.toMatchObject({ code: "ERR_RPC_CLOSED" });
    } finally {
      await server.close();
    }
  });
});
