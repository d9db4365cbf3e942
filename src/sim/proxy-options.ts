/**
 * Command-line flags of `ackwire proxy`, parsed into a plain config. Pure (no I/O), so every
 * runtime's CLI can share it and tests can check every error message.
 */

import { validateLinkConfig, LinkError, type LinkConfig } from "./link.js";

export class ProxyUsageError extends Error {
  readonly code = "ERR_PROXY_USAGE";
  constructor(message: string) {
    super(message);
    this.name = "ProxyUsageError";
  }
}

export interface HostPort {
  host: string;
  port: number;
  family: 4 | 6 | "name";
}

export interface ProxyCommand {
  help: boolean;
  listen: HostPort;
  upstream: HostPort;
  /** Impairments, applied to each direction separately (seeds are derived per flow and direction). */
  link: LinkConfig;
  seed: number;
  /** Stop after this many seconds; undefined runs until SIGINT/SIGTERM. */
  durationS?: number;
  idleTimeoutMs: number;
  /** Print counters every N seconds while running (0: only at exit). */
  statsEveryS: number;
  /** Give every client a new upstream port every N seconds, as a NAT that loses its
   *  mappings (0: never). */
  rebindEveryS: number;
}

export const PROXY_HELP = `ackwire proxy: a UDP impairment proxy (loss, bursts, latency, jitter, reordering,
duplication, corruption, a bandwidth bottleneck with a queue, MTU).

Usage:
  ackwire proxy --to HOST:PORT [--listen HOST:PORT] [impairments] [--seed N] [--duration S]

Clients send to --listen; each client gets its own upstream socket, so the server's replies
go back to the right client. Every impairment applies to each direction on its own
(latency 40 means 40 ms each way, 80 ms added to the round trip).

Addresses:
  --listen HOST:PORT     where clients send (default 127.0.0.1:9000; IPv6 as [::1]:9000)
  --to HOST:PORT         the real server (required)

Impairments (percentages are 0-100, times in milliseconds):
  --loss PCT             independent random loss, e.g. --loss 5
  --burst GB,BG[,LB[,LG]]  Gilbert-Elliott burst loss, in percent per datagram:
                         GB = chance good->bad, BG = chance bad->good,
                         LB = loss in bad state (default 100), LG = loss in good (default 0).
                         e.g. --burst 1,25 : bursts of ~4 datagrams, ~3.8% average loss
  --latency MS           one-way delay
  --jitter MS            extra random delay in [0, MS); keeps order unless --jitter-reorders
  --jitter-reorders      let jitter reorder datagrams
  --reorder PCT          hold back PCT% of datagrams so later ones overtake them
  --reorder-delay MS     how long a held-back datagram waits (default max(10, 2 x jitter))
  --duplicate PCT        deliver PCT% of datagrams twice
  --corrupt PCT          flip 1-3 bits in PCT% of datagrams
  --bandwidth RATE       bottleneck rate: 2mbit, 500kbit, 1gbit, or bits/s (e.g. 64000)
  --queue N              bottleneck queue in datagrams (tail drop when full; needs --bandwidth)
  --queue-bytes N        bottleneck queue in bytes (needs --bandwidth)
  --overhead N           bytes counted per datagram at the bottleneck (e.g. 28 for IPv4+UDP)
  --mtu N                drop datagrams larger than N bytes

Run:
  --seed N               random seed (default 1): same seed + same traffic = same impairments
  --duration S           stop after S seconds (default: until Ctrl-C)
  --idle-timeout S       forget a client after S seconds of silence (default 60)
  --stats-every S        print counters every S seconds (default 0: only at exit)
  --rebind-every S       every S seconds give each client a new upstream port, as a NAT that
                         lost its mappings: the server sees it come from a new address
                         (ackwire connections move with it; default 0: never)
  --help                 this text

Example:
  ackwire proxy --listen 127.0.0.1:9000 --to 127.0.0.1:7777 --loss 5 --latency 40 --jitter 10 \\
    --bandwidth 2mbit --queue 50 --mtu 1200 --seed 1
`;

const VALUE_FLAGS = new Set([
  "listen",
  "to",
  "loss",
  "burst",
  "latency",
  "jitter",
  "reorder",
  "reorder-delay",
  "duplicate",
  "corrupt",
  "bandwidth",
  "queue",
  "queue-bytes",
  "overhead",
  "mtu",
  "seed",
  "duration",
  "idle-timeout",
  "stats-every",
  "rebind-every",
]);
const BOOLEAN_FLAGS = new Set(["help", "jitter-reorders"]);

/** Parse "127.0.0.1:9000", "[::1]:9000" or "localhost:9000". */
export function parseHostPort(text: string, flag: string): HostPort {
  let host: string;
  let portText: string;
  const bracketed = /^\[([^\]]+)\]:(\d+)$/.exec(text);
  if (bracketed) {
    host = bracketed[1];
    portText = bracketed[2];
  } else {
    const colon = text.lastIndexOf(":");
    if (colon <= 0 || text.indexOf(":") !== colon) {
      throw new ProxyUsageError(
        `--${flag} ${text}: expected HOST:PORT, e.g. 127.0.0.1:9000 (write IPv6 addresses in brackets: [::1]:9000)`,
      );
    }
    host = text.slice(0, colon);
    portText = text.slice(colon + 1);
  }
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > 65535) {
    throw new ProxyUsageError(`--${flag} ${text}: the port must be a number from 0 to 65535`);
  }
  const family = host.includes(":") ? 6 : /^\d{1,3}(\.\d{1,3}){3}$/.test(host) ? 4 : "name";
  return { host, port, family };
}

/** Format an address the way the core keys flows: IPv6 in brackets. */
export function formatHostPort(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

function number(flag: string, text: string, what: string): number {
  const value = Number(text);
  if (text.trim() === "" || !Number.isFinite(value)) {
    throw new ProxyUsageError(`--${flag} ${text}: expected ${what}`);
  }
  return value;
}

function percent(flag: string, text: string): number {
  const value = number(flag, text.endsWith("%") ? text.slice(0, -1) : text, "a percentage from 0 to 100, e.g. 5");
  if (value < 0 || value > 100) {
    throw new ProxyUsageError(`--${flag} ${text}: a percentage must be from 0 to 100 (5 means 5%)`);
  }
  return value / 100;
}

function nonNegative(flag: string, text: string, unit: string): number {
  const value = number(flag, text, `a number of ${unit} >= 0`);
  if (value < 0) throw new ProxyUsageError(`--${flag} ${text}: must be >= 0 ${unit}`);
  return value;
}

function positiveInteger(flag: string, text: string, unit: string): number {
  const value = number(flag, text, `a whole number of ${unit}`);
  if (!Number.isInteger(value) || value < 1) throw new ProxyUsageError(`--${flag} ${text}: use a whole number of ${unit} >= 1`);
  return value;
}

const RATE_UNITS: Record<string, number> = { "": 1, bit: 1, kbit: 1e3, mbit: 1e6, gbit: 1e9 };

/** "2mbit" -> 2_000_000 bits/s. Byte-based units are refused because tc's "mbps" means bytes. */
export function parseBandwidth(text: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(text.trim());
  const unit = m?.[2].toLowerCase() ?? "";
  if (!m || !(unit in RATE_UNITS)) {
    throw new ProxyUsageError(
      `--bandwidth ${text}: use bits per second with a unit of bit, kbit, mbit or gbit (e.g. 2mbit, 500kbit), or a plain number of bits/s`,
    );
  }
  const bps = Number(m[1]) * RATE_UNITS[unit];
  if (!(bps > 0)) throw new ProxyUsageError(`--bandwidth ${text}: the rate must be greater than 0`);
  return bps;
}

function burst(text: string): NonNullable<LinkConfig["burst"]> {
  const parts = text.split(",");
  if (parts.length < 2 || parts.length > 4) {
    throw new ProxyUsageError(
      `--burst ${text}: expected GB,BG[,LB[,LG]] in percent, e.g. --burst 1,25 (1% chance to enter a burst, 25% to leave it)`,
    );
  }
  const [gb, bg, lb, lg] = parts.map((p) => percent("burst", p));
  if (bg === 0 && gb > 0) {
    throw new ProxyUsageError(`--burst ${text}: BG (chance to leave the bad state) must be > 0, or the loss never ends`);
  }
  return { pGoodToBad: gb, pBadToGood: bg, lossInBad: lb ?? 1, lossInGood: lg ?? 0 };
}

/** Parse the arguments after `proxy`. Throws `ProxyUsageError` naming the flag and the fix. */
export function parseProxyArgs(argv: readonly string[]): ProxyCommand {
  const values = new Map<string, string>();
  const flags = new Set<string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "-h") {
      flags.add("help");
      continue;
    }
    if (!arg.startsWith("--")) {
      throw new ProxyUsageError(`unexpected argument "${arg}": options start with --, see ackwire proxy --help`);
    }
    const eq = arg.indexOf("=");
    const name = eq >= 0 ? arg.slice(2, eq) : arg.slice(2);
    if (BOOLEAN_FLAGS.has(name)) {
      if (eq >= 0) throw new ProxyUsageError(`--${name} takes no value`);
      flags.add(name);
      continue;
    }
    if (!VALUE_FLAGS.has(name)) {
      throw new ProxyUsageError(`unknown option --${name}; run ackwire proxy --help for the list`);
    }
    let value: string | undefined;
    if (eq >= 0) value = arg.slice(eq + 1);
    else {
      value = argv[i + 1];
      if (value === undefined || (value.startsWith("--") && value.length > 2)) {
        throw new ProxyUsageError(`--${name} needs a value, e.g. --${name} ${exampleFor(name)}`);
      }
      i++;
    }
    if (values.has(name)) throw new ProxyUsageError(`--${name} given twice; give it once`);
    values.set(name, value);
  }

  const help = flags.has("help");
  const get = (name: string): string | undefined => values.get(name);
  const link: LinkConfig = {};
  let v: string | undefined;
  if ((v = get("loss")) !== undefined) link.lossRate = percent("loss", v);
  if ((v = get("burst")) !== undefined) link.burst = burst(v);
  if ((v = get("latency")) !== undefined) link.latencyMs = nonNegative("latency", v, "milliseconds");
  if ((v = get("jitter")) !== undefined) link.jitterMs = nonNegative("jitter", v, "milliseconds");
  if (flags.has("jitter-reorders")) link.reorder = true;
  if ((v = get("reorder")) !== undefined) link.reorderRate = percent("reorder", v);
  if ((v = get("reorder-delay")) !== undefined) link.reorderDelayMs = nonNegative("reorder-delay", v, "milliseconds");
  if ((v = get("duplicate")) !== undefined) link.duplicateRate = percent("duplicate", v);
  if ((v = get("corrupt")) !== undefined) link.corruptRate = percent("corrupt", v);
  if ((v = get("bandwidth")) !== undefined) link.bandwidthBps = parseBandwidth(v);
  if ((v = get("queue")) !== undefined) link.queuePackets = positiveInteger("queue", v, "datagrams");
  if ((v = get("queue-bytes")) !== undefined) link.queueBytes = positiveInteger("queue-bytes", v, "bytes");
  if ((v = get("overhead")) !== undefined) link.overheadBytes = nonNegative("overhead", v, "bytes");
  if ((v = get("mtu")) !== undefined) link.mtu = positiveInteger("mtu", v, "bytes");
  if ((link.queuePackets !== undefined || link.queueBytes !== undefined) && link.bandwidthBps === undefined) {
    throw new ProxyUsageError("--queue/--queue-bytes limit the bottleneck queue: add --bandwidth (e.g. --bandwidth 2mbit)");
  }
  try {
    validateLinkConfig(link);
  } catch (e) {
    if (e instanceof LinkError) throw new ProxyUsageError(e.message);
    throw e;
  }

  const seedText = get("seed");
  const seed = seedText === undefined ? 1 : number("seed", seedText, "an integer seed, e.g. --seed 1");
  if (!Number.isInteger(seed)) throw new ProxyUsageError(`--seed ${seedText}: use an integer`);
  const durationText = get("duration");
  const durationS = durationText === undefined ? undefined : nonNegative("duration", durationText, "seconds");
  const idleText = get("idle-timeout");
  const idleTimeoutMs = idleText === undefined ? 60_000 : nonNegative("idle-timeout", idleText, "seconds") * 1000;
  if (idleTimeoutMs <= 0) throw new ProxyUsageError("--idle-timeout must be more than 0 seconds");
  const statsText = get("stats-every");
  const statsEveryS = statsText === undefined ? 0 : nonNegative("stats-every", statsText, "seconds");
  const rebindText = get("rebind-every");
  const rebindEveryS = rebindText === undefined ? 0 : nonNegative("rebind-every", rebindText, "seconds");
  if (rebindEveryS > 0 && rebindEveryS < 0.1) throw new ProxyUsageError(`--rebind-every ${rebindText}: use 0.1 seconds or more (0 turns it off)`);

  const toText = get("to");
  if (toText === undefined && !help) {
    throw new ProxyUsageError("--to HOST:PORT is required: the address of the real server, e.g. --to 127.0.0.1:7777");
  }
  const upstream = toText === undefined ? { host: "127.0.0.1", port: 0, family: 4 as const } : parseHostPort(toText, "to");
  if (toText !== undefined && upstream.port === 0) throw new ProxyUsageError(`--to ${toText}: the server port cannot be 0`);
  const listen = parseHostPort(get("listen") ?? "127.0.0.1:9000", "listen");
  return { help, listen, upstream, link, seed, durationS, idleTimeoutMs, statsEveryS, rebindEveryS };
}

function exampleFor(name: string): string {
  switch (name) {
    case "listen":
      return "127.0.0.1:9000";
    case "to":
      return "127.0.0.1:7777";
    case "bandwidth":
      return "2mbit";
    case "burst":
      return "1,25";
    default:
      return "5";
  }
}
