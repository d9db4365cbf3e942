/**
 * The RuntimeAdapter of the runtime this code runs in (globalThis.Bun, then globalThis.Deno,
 * else Node), the same rule as the package root. The adapters touch their runtime only when a
 * socket is opened, so importing all three is safe everywhere.
 */
import type { RuntimeAdapter } from "../api/socket.js";
import { bunAdapter } from "../../runtimes/bun/index.js";
import { denoAdapter } from "../../runtimes/deno/index.js";
import { nodeAdapter } from "../../runtimes/node/index.js";

export function currentAdapter(): RuntimeAdapter {
  const g = globalThis as { Bun?: unknown; Deno?: unknown };
  if (g.Bun !== undefined) return bunAdapter;
  if (g.Deno !== undefined) return denoAdapter;
  return nodeAdapter;
}
