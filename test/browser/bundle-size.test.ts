// ackwire/browser's budget: at most 60 kB gzip for what a page loads on import, WASM included
// (dist/browser/, built by scripts/build.mjs with esbuild --platform=browser, which fails on
// any node:* module in the import graph).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { ROOT } from "../interop/helpers.js";

const BUDGET_BYTES = 60_000;
const OUT = join(ROOT, "dist", "browser");

interface Meta {
  inputs: Record<string, unknown>;
  outputs: Record<string, { imports: { path: string; kind: string }[]; inputs: Record<string, unknown>; entryPoint?: string }>;
}

function loadedOnImport(meta: Meta): string[] {
  const entry = Object.keys(meta.outputs).find((o) => meta.outputs[o]!.entryPoint !== undefined && o.endsWith(".js"))!;
  const seen = new Set<string>([entry]);
  const queue = [entry];
  while (queue.length > 0) {
    for (const i of meta.outputs[queue.pop()!]!.imports) {
      if (i.kind === "import-statement" && !seen.has(i.path)) {
        seen.add(i.path);
        queue.push(i.path);
      }
    }
  }
  return [...seen];
}

const gzipped = (output: string): number => gzipSync(readFileSync(join(ROOT, output)), { level: 9 }).length;

describe("ackwire/browser bundle", () => {
  const meta = JSON.parse(readFileSync(join(OUT, "meta.json"), "utf8")) as Meta;
  const loaded = loadedOnImport(meta);

  it(`loads at most ${BUDGET_BYTES} bytes gzip on import, the engine's WASM included`, () => {
    const inputs = loaded.flatMap((o) => Object.keys(meta.outputs[o]!.inputs));
    // The release engine comes as engine.wasm beside the bundle, fetched on import.
    expect(inputs.some((i) => i.endsWith("wasm-bytes-release.generated.js"))).toBe(true);
    const wasm = join("dist", "browser", "engine.wasm");
    expect(readFileSync(join(ROOT, wasm))).toEqual(readFileSync(join(ROOT, "build", "engine.release.wasm")));
    const total = loaded.reduce((sum, o) => sum + gzipped(o), 0) + gzipped(wasm);
    console.log(`ackwire/browser on import: ${total} bytes gzip (${loaded.length} files and engine.wasm)`);
    expect(total).toBeLessThanOrEqual(BUDGET_BYTES);
  });

  it("keeps the secure layer and the debug engine out of what loads on import", () => {
    const inputs = new Set(loaded.flatMap((o) => Object.keys(meta.outputs[o]!.inputs)));
    for (const i of inputs) {
      expect(i).not.toMatch(/^node:|wasm-bytes-debug|wasm-aead|@noble|runtimes\//);
    }
    expect(Object.keys(meta.inputs).some((i) => i.startsWith("node:"))).toBe(false);
  });

  it("holds the TypeScript reference engine as a stub only (every browser has WebAssembly)", () => {
    const outputs = loaded.map((o) => meta.outputs[o]! as unknown as { inputs: Record<string, { bytesInOutput: number }> });
    const twin = outputs.flatMap((o) => Object.entries(o.inputs)).filter(([path]) => /engine[\\/]ts-engine\.js$/.test(path));
    expect(twin.length).toBe(1);
    expect(twin[0]![1].bytesInOutput).toBeLessThan(300);
  });

  it("holds the server's table of accept decisions in progress as a stub only (a page is a client)", () => {
    const outputs = loaded.map((o) => meta.outputs[o]! as unknown as { inputs: Record<string, { bytesInOutput: number }> });
    const table = outputs.flatMap((o) => Object.entries(o.inputs)).filter(([path]) => /session[\\/]pending-accepts\.js$/.test(path));
    expect(table.length).toBe(1);
    expect(table[0]![1].bytesInOutput).toBeLessThan(600);
  });

  it("holds the server's side of the handshake and its half of the wire codec as stubs only (a page is a client)", () => {
    const outputs = loaded.map((o) => meta.outputs[o]! as unknown as { inputs: Record<string, { bytesInOutput: number }> });
    const inputs = outputs.flatMap((o) => Object.entries(o.inputs));
    for (const stubbed of [/wire[\\/]control-server\.js$/, /session[\\/]server-handshake\.js$/]) {
      const found = inputs.filter(([path]) => stubbed.test(path));
      expect(found.length, String(stubbed)).toBe(1);
      expect(found[0]![1].bytesInOutput, String(stubbed)).toBeLessThan(300);
    }
  });

  it("holds NAT punching, address rate limits, late-arrival reports and the option-key guess as stubs only (a page's one peer is its server)", () => {
    const outputs = loaded.map((o) => meta.outputs[o]! as unknown as { inputs: Record<string, { bytesInOutput: number }> });
    const inputs = outputs.flatMap((o) => Object.entries(o.inputs));
    for (const stubbed of [/session[\\/]punch\.js$/, /session[\\/]rate-limit\.js$/, /session[\\/]late-arrivals\.js$/]) {
      const found = inputs.filter(([path]) => stubbed.test(path));
      expect(found.length, String(stubbed)).toBe(1);
      expect(found[0]![1].bytesInOutput, String(stubbed)).toBeLessThan(300);
    }
    // The guess's stub is inlined away entirely; the edit distance must not be there.
    expect(inputs.filter(([path, i]) => /util[\\/]nearest-key\.js$/.test(path) && i.bytesInOutput > 100)).toEqual([]);
  });

  it("holds path MTU discovery, parity sending and the non-default controllers as stubs only", () => {
    const outputs = loaded.map((o) => meta.outputs[o]! as unknown as { inputs: Record<string, { bytesInOutput: number }> });
    const inputs = outputs.flatMap((o) => Object.entries(o.inputs));
    for (const stubbed of [/session[\\/]path-mtu\.js$/, /fec[\\/]parity-sender\.js$/, /fec[\\/]parity-receiver\.js$/, /congestion[\\/]binary\.js$/, /congestion[\\/]fixed\.js$/]) {
      const found = inputs.filter(([path]) => stubbed.test(path));
      expect(found.length, String(stubbed)).toBe(1);
      expect(found[0]![1].bytesInOutput, String(stubbed)).toBeLessThan(400);
    }
  });
});
