// Type-level checks of typed RPC, compiled by test/types/rpc-types.test.ts with
// `tsc --noEmit -p test/types/tsconfig.json` (never run). Each `@ts-expect-error` line must fail
// to compile (tsc reports an unused directive otherwise), and the `Expect<Equal<...>>` lines
// pin the inferred types.
import type { Connection } from "../../src/index.js";
import { attachRpc, RpcPeer, type Value } from "../../src/game/index.js";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Expect<T extends true> = T;

interface ServerRpc {
  move(params: { x: number; y: number }): { ok: boolean; at: [number, number] };
  ping(): number;
  say(params?: string): void;
  load(params: { id: string }): Promise<Uint8Array>;
}
interface ClientRpc {
  kick(params: { reason: string }): boolean;
}

declare const conn: Connection;
const rpc = attachRpc<ServerRpc, ClientRpc>(conn, {
  handlers: {
    kick: (params, ctx) => {
      type _p = Expect<Equal<typeof params, { reason: string }>>;
      void ctx.signal;
      return params.reason.length > 0;
    },
  },
});

export async function typedCalls(): Promise<void> {
  const moved = await rpc.call("move", { x: 1, y: 2 }, { timeoutMs: 100 });
  type _move = Expect<Equal<typeof moved, { ok: boolean; at: [number, number] }>>;
  const pong = await rpc.call("ping");
  type _ping = Expect<Equal<typeof pong, number>>;
  const said = await rpc.call("say");
  type _say = Expect<Equal<typeof said, null>>; // void arrives as null
  await rpc.call("say", "hi");
  const loaded = await rpc.peer.call("load", { id: "map" });
  type _load = Expect<Equal<typeof loaded, Uint8Array>>; // a promise result is unwrapped
  rpc.notify("say", "gg");

  // @ts-expect-error an unknown method
  await rpc.call("teleport", { x: 1 });
  // @ts-expect-error a param of the wrong type
  await rpc.call("move", { x: "1", y: 2 });
  // @ts-expect-error a missing param field
  await rpc.call("move", { x: 1 });
  // @ts-expect-error params are required for move
  await rpc.call("move");
  // @ts-expect-error ping takes no params
  await rpc.call("ping", 5);
  // @ts-expect-error the result is not a string
  const wrong: string = await rpc.call("ping");
  void wrong;
  // @ts-expect-error notify checks its params too
  rpc.notify("say", 5);
  // @ts-expect-error a method the remote side does not answer (it is this side's)
  await rpc.call("kick", { reason: "x" });
}

// A handler of the wrong shape does not compile either.
attachRpc<ServerRpc, ClientRpc>(conn, {
  handlers: {
    // @ts-expect-error kick answers a boolean
    kick: () => "yes",
  },
});
attachRpc<ServerRpc, ClientRpc>(conn, {
  handlers: {
    // @ts-expect-error not a method of ClientRpc
    ban: () => true,
  },
});

// Untyped (the default): any method and params, results are codec Values, handlers take Values.
export async function untypedCalls(): Promise<void> {
  const peer = new RpcPeer({ send: () => {}, now: () => 0, handlers: { echo: (p: Value) => p, any: () => new Map() } });
  const v = await peer.call("anything", { a: [1, "b"] });
  type _v = Expect<Equal<typeof v, Value>>;
  await peer.call("bare");
  peer.notify("n");
  const untyped = attachRpc(conn);
  const w = await untyped.call("x", 1, { timeoutMs: 5 });
  type _w = Expect<Equal<typeof w, Value>>;
}
