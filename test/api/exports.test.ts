// What the docs call public is importable from the package's entries (found by a docs review:
// README and docs/CHANNELS.md call DeliveryNotificationManager public, docs/SIMULATOR.md shows
// startProxy; neither was reachable through package.json's exports). Loads the compiled entries
// the exports map points at.
import { join, dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const pkg = (await import(pathToFileURL(join(ROOT, "package.json")).href, { with: { type: "json" } })).default as { exports: Record<string, { import: string }> };
const entry = async (name: string): Promise<Record<string, unknown>> => (await import(pathToFileURL(join(ROOT, pkg.exports[name]!.import)).href)) as Record<string, unknown>;

describe("the package's entries", () => {
  it("ackwire exports DeliveryNotificationManager, and it reports each packet once", async () => {
    const root = await entry(".");
    const DNM = root.DeliveryNotificationManager as new (h: object) => { dispatch(s: number, now: number, bytes: number, data: string): void; acknowledge(s: number, now: number): boolean; detectLosses(now: number, rto: number): number; delivered: number; dropped: number };
    expect(typeof DNM).toBe("function");
    const seen: string[] = [];
    const dnm = new DNM({ onDelivered: (_s: number, d: string) => seen.push(`+${d}`), onDropped: (_s: number, d: string) => seen.push(`-${d}`) });
    dnm.dispatch(10, 0, 100, "a");
    dnm.dispatch(11, 1, 100, "b");
    expect(dnm.acknowledge(11, 20)).toBe(true);
    dnm.detectLosses(2000, 1000);
    expect(seen).toEqual(["+b", "-a"]);
  });

  it("ackwire/worker exports the root's DEFAULT_CHANNELS (WORKER.md: the same shape as ackwire; found by a newcomer review)", async () => {
    const root = await entry(".");
    const worker = await entry("./worker");
    expect(worker.DEFAULT_CHANNELS).toBeDefined();
    expect(worker.DEFAULT_CHANNELS).toEqual(root.DEFAULT_CHANNELS);
  });

  it("ackwire exports Group; ackwire/game the byte writer and reader and their read error", async () => {
    const root = await entry(".");
    const nodeEntry = await entry("./node");
    expect(typeof root.Group).toBe("function");
    expect(nodeEntry.Group).toBe(root.Group);
    const game = await entry("./game");
    const W = game.ByteWriter as new () => { varint(v: number): { string(s: string): { finish(): Uint8Array } } };
    const R = game.ByteReader as new (b: Uint8Array) => { varint(): number; string(): string; u8(): number };
    const bytes = new W().varint(-3).string("ok").finish();
    const r = new R(bytes);
    expect([r.varint(), r.string()]).toEqual([-3, "ok"]);
    expect(() => r.u8()).toThrow(game.ByteReadError as new () => Error);
  });

  it("ackwire/node exports startProxy, and the proxy forwards", async () => {
    const nodeEntry = await entry("./node");
    const startProxy = nodeEntry.startProxy as (o: object) => Promise<{ address: { port: number }; close(): Promise<void> }>;
    const listen = nodeEntry.listen as (o: object) => Promise<{ address: { port: number }; on(e: string, f: (c: { on(e: string, f: (m: { data: Uint8Array; channel: number }) => void): void; send(d: Uint8Array, o: object): void }) => void): void; close(): Promise<void> }>;
    const connect = nodeEntry.connect as (t: string, o: object) => Promise<{ send(d: Uint8Array, o: object): void; once(e: string, f: (m: { data: Uint8Array }) => void): void; close(): Promise<unknown> }>;
    expect(typeof startProxy).toBe("function");
    const server = await listen({ protocolId: 0x5151, host: "127.0.0.1", port: 0 });
    server.on("connection", (c) => c.on("message", (m) => c.send(m.data, { channel: m.channel })));
    // "host:port" text as on the command line, or { host, port } (found by a newcomer review:
    // strings died with a TypeError, and the family was required in the types).
    const proxy = await startProxy({ listen: "127.0.0.1:0", upstream: { host: "127.0.0.1", port: server.address.port }, link: { latencyMs: 5 }, seed: 1 });
    await expect(startProxy({ listen: 9000 as never, upstream: "127.0.0.1:1", link: {} })).rejects.toThrow(/startProxy: listen must be "host:port"/);
    await expect(startProxy({ listen: "127.0.0.1", upstream: "127.0.0.1:1", link: {} })).rejects.toThrow(/startProxy: listen: .*expected HOST:PORT/);
    try {
      const conn = await connect(`127.0.0.1:${proxy.address.port}`, { protocolId: 0x5151 });
      const back = new Promise<number>((resolve) => conn.once("message", (m) => resolve(m.data[0]!)));
      conn.send(Uint8Array.of(7), { channel: 0 });
      expect(await back).toBe(7);
      await conn.close();
    } finally {
      await proxy.close();
      await server.close();
    }
  });
});
