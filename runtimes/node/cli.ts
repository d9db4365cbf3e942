/**
 * The `ackwire` command on Node. `main(argv)` takes the arguments after the program name
 * (e.g. `["proxy", "--to", "127.0.0.1:7777"]`) and resolves to an exit code; it never calls
 * `process.exit`, so it can be tested in-process.
 */

import { PROXY_HELP, ProxyUsageError, parseProxyArgs, formatHostPort } from "../../src/sim/proxy-options.js";
import type { LinkConfig } from "../../src/sim/link.js";
import { formatProxyStats, startProxy } from "./proxy.js";
import { formatSummary, parseQlog, summarize, TraceFormatError } from "../../src/trace/summary.js";

interface NodeProcess {
  argv: string[];
  exitCode?: number;
  stdout: { write(text: string): boolean };
  stderr: { write(text: string): boolean };
  once(signal: "SIGINT" | "SIGTERM", listener: () => void): void;
  off(signal: "SIGINT" | "SIGTERM", listener: () => void): void;
}

interface CliGlobals {
  process: NodeProcess;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(id: unknown): void;
  setInterval(fn: () => void, ms: number): unknown;
  clearInterval(id: unknown): void;
}

/** The part of AbortSignal the CLI uses. */
export interface StopSignal {
  readonly aborted: boolean;
  addEventListener(type: "abort", listener: () => void): void;
  removeEventListener(type: "abort", listener: () => void): void;
}

const host = globalThis as unknown as CliGlobals;

export interface CliIo {
  out(text: string): void;
  err(text: string): void;
}

const defaultIo: CliIo = {
  out: (text) => void host.process.stdout.write(text.endsWith("\n") ? text : `${text}\n`),
  err: (text) => void host.process.stderr.write(text.endsWith("\n") ? text : `${text}\n`),
};

export const USAGE = `ackwire: reliable UDP for real-time games.

Usage:
  ackwire proxy --to HOST:PORT [options]   run a UDP impairment proxy (see ackwire proxy --help)
  ackwire trace FILE                       summarize a connection trace (.sqlog, EndpointConfig.trace)
  ackwire --help                           this text
`;

export interface MainOptions {
  io?: CliIo;
  /** Stops a running proxy like Ctrl-C would (for tests and embedding). */
  signal?: StopSignal;
}

export async function main(argv: readonly string[], options: MainOptions = {}): Promise<number> {
  const io = options.io ?? defaultIo;
  const [command, ...rest] = argv;
  if (command === undefined || command === "--help" || command === "-h" || command === "help") {
    io.out(USAGE);
    return command === undefined ? 2 : 0;
  }
  if (command === "proxy") return runProxy(rest, io, options.signal);
  if (command === "trace") return runTrace(rest, io);
  io.err(`error: unknown command "${command}". Commands: proxy, trace. Run ackwire --help.`);
  return 2;
}

async function runProxy(argv: readonly string[], io: CliIo, signal?: StopSignal): Promise<number> {
  let command;
  try {
    command = parseProxyArgs(argv);
  } catch (e) {
    if (e instanceof ProxyUsageError) {
      io.err(`error: ${e.message}`);
      return 2;
    }
    throw e;
  }
  if (command.help) {
    io.out(PROXY_HELP);
    return 0;
  }

  let proxy;
  try {
    proxy = await startProxy({
      listen: command.listen,
      upstream: command.upstream,
      link: command.link,
      seed: command.seed,
      idleTimeoutMs: command.idleTimeoutMs,
    });
  } catch (e) {
    const err = e as Error & { code?: string };
    const listen = formatHostPort(command.listen.host, command.listen.port);
    const hint =
      err.code === "EADDRINUSE"
        ? "another process holds that port; pick another with --listen"
        : err.code === "EADDRNOTAVAIL"
          ? "that address is not on this machine; use 127.0.0.1 or ::1"
          : "check --listen";
    io.err(`error: cannot listen on ${listen}: ${err.message} (${hint})`);
    return 1;
  }

  const bound = formatHostPort(proxy.address.host, proxy.address.port);
  const upstream = formatHostPort(command.upstream.host, command.upstream.port);
  io.out(`ackwire proxy: ${bound} -> ${upstream}  seed ${command.seed}  ${describeLink(command.link)}`);

  await new Promise<void>((resolve) => {
    let durationTimer: unknown;
    let statsTimer: unknown;
    let rebindTimer: unknown;
    const stop = (): void => {
      host.process.off("SIGINT", stop);
      host.process.off("SIGTERM", stop);
      signal?.removeEventListener("abort", stop);
      if (durationTimer !== undefined) host.clearTimeout(durationTimer);
      if (statsTimer !== undefined) host.clearInterval(statsTimer);
      if (rebindTimer !== undefined) host.clearInterval(rebindTimer);
      resolve();
    };
    host.process.once("SIGINT", stop);
    host.process.once("SIGTERM", stop);
    if (signal?.aborted) return stop();
    signal?.addEventListener("abort", stop);
    if (command.durationS !== undefined) durationTimer = host.setTimeout(stop, command.durationS * 1000);
    if (command.statsEveryS > 0) {
      statsTimer = host.setInterval(() => io.out(formatProxyStats(proxy.stats())), command.statsEveryS * 1000);
    }
    if (command.rebindEveryS > 0) {
      let rebinds = 0;
      rebindTimer = host.setInterval(() => {
        proxy.rebind();
        io.out(`rebinding ${++rebinds}: every client has a new upstream port`);
      }, command.rebindEveryS * 1000);
    }
  });

  const stats = proxy.stats();
  await proxy.close();
  io.out(formatProxyStats(stats));
  return 0;
}

function describeLink(link: LinkConfig): string {
  const parts: string[] = [];
  const pct = (x: number): string => `${+(x * 100).toFixed(4)}%`;
  if (link.lossRate) parts.push(`loss ${pct(link.lossRate)}`);
  if (link.burst) parts.push(`burst ${pct(link.burst.pGoodToBad)}/${pct(link.burst.pBadToGood)}`);
  if (link.latencyMs) parts.push(`latency ${link.latencyMs} ms`);
  if (link.jitterMs) parts.push(`jitter ${link.jitterMs} ms${link.reorder ? " (reordering)" : ""}`);
  if (link.reorderRate) parts.push(`reorder ${pct(link.reorderRate)}`);
  if (link.duplicateRate) parts.push(`duplicate ${pct(link.duplicateRate)}`);
  if (link.corruptRate) parts.push(`corrupt ${pct(link.corruptRate)}`);
  if (link.bandwidthBps) parts.push(`bandwidth ${link.bandwidthBps} bit/s`);
  if (link.queuePackets) parts.push(`queue ${link.queuePackets} pkts`);
  if (link.queueBytes) parts.push(`queue ${link.queueBytes} B`);
  if (link.mtu) parts.push(`mtu ${link.mtu}`);
  return parts.length ? `(each way: ${parts.join(", ")})` : "(no impairments)";
}

// Run when executed directly (`node dist/runtimes/node/cli.js proxy ...`); the package's
// bin script imports `main` itself instead.
const entry = host.process?.argv?.[1]?.replace(/\\/g, "/");
if (entry !== undefined && /\/runtimes\/node\/cli\.(js|ts)$/.test(entry) && (import.meta as unknown as { url: string }).url.endsWith(entry.slice(entry.lastIndexOf("/runtimes/")))) {
  main(host.process.argv.slice(2)).then(
    (code) => {
      host.process.exitCode = code;
    },
    (e: unknown) => {
      defaultIo.err(`error: ${(e as Error)?.stack ?? String(e)}`);
      host.process.exitCode = 1;
    },
  );
}

/** `ackwire trace FILE`: the summary of a qlog trace. */
function runTrace(argv: readonly string[], io: CliIo): number {
  if (argv.length !== 1 || argv[0]!.startsWith("-")) {
    io.err("usage: ackwire trace FILE   (a .sqlog trace written by EndpointConfig.trace, e.g. qlogFiles(dir))");
    return 2;
  }
  const fs = (globalThis as { process?: { getBuiltinModule?(id: string): unknown } }).process?.getBuiltinModule?.("node:fs") as
    | { readFileSync(path: string, encoding: "utf8"): string }
    | undefined;
  if (fs === undefined) {
    io.err("error: ackwire trace needs process.getBuiltinModule (Node 20.16+)");
    return 1;
  }
  let text: string;
  try {
    text = fs.readFileSync(argv[0]!, "utf8");
  } catch (e) {
    io.err(`error: cannot read ${argv[0]}: ${(e as Error).message}`);
    return 1;
  }
  try {
    io.out(formatSummary(summarize(parseQlog(text))));
    return 0;
  } catch (e) {
    if (e instanceof TraceFormatError) {
      io.err(`error: ${argv[0]}: ${e.message}`);
      return 1;
    }
    throw e;
  }
}
