// Real networks for the interop tests and bench/netns: two Linux network namespaces (a client host and a server
// host) joined by a veth pair, with the kernel's own token bucket filter (`tc qdisc ... tbf`) as
// the bottleneck in each direction (a rate, a bucket and a queue that tail-drops) and a real
// link MTU. Needs root and iproute2 (`ip`, `tc`); `netnsUnsupported()` says why not otherwise.
// Nothing leaves the namespaces: the only link is the veth pair between them.
// Plain JavaScript (with JSDoc types) so that test/ and the bench's .mjs runner share it.
import { execFileSync } from "node:child_process";

/** @type {string | null | undefined} */
let unsupported;
/**
 * Why real-network tests cannot run here, or undefined if they can. Probed once.
 * @returns {string | undefined}
 */
export function netnsUnsupported() {
  unsupported ??=
    probeNamespace(
      "p",
      (name) => {
        ip(["-n", name, "link", "add", "p0", "type", "veth", "peer", "name", "p1"]);
        execFileSync("ip", ["netns", "exec", name, "tc", "qdisc", "add", "dev", "p0", "root", "tbf", "rate", "10mbit", "burst", "16kb", "limit", "32kb"], { stdio: "pipe" });
      },
      "network namespaces with veth and tc tbf are not available (root and iproute2 needed)",
    ) ?? null;
  return unsupported ?? undefined;
}

/**
 * Runs `setup(name)` in a throwaway namespace: undefined if it worked, else `missing` and the
 * first line of the error.
 * @param {string} suffix
 * @param {(name: string) => void} setup
 * @param {string} missing
 * @returns {string | undefined}
 */
export function probeNamespace(suffix, setup, missing) {
  const name = `aw-probe-${process.pid}-${suffix}`;
  try {
    ip(["netns", "add", name]);
    try {
      setup(name);
    } finally {
      ip(["netns", "del", name]);
    }
    return undefined;
  } catch (error) {
    return `${missing}: ${String(error.message).split("\n")[0]}`;
  }
}

/** @param {string[]} args */
export function ip(args) {
  return execFileSync("ip", args, { stdio: ["ignore", "pipe", "pipe"] }).toString();
}

/**
 * Runs a command inside namespace `ns`; returns its stdout.
 * @param {string} ns
 * @param {string[]} command
 */
export function inNs(ns, command) {
  return execFileSync("ip", ["netns", "exec", ns, ...command], { stdio: ["ignore", "pipe", "pipe"] }).toString();
}

/**
 * A bottleneck: `rateMbit` each direction; `queueBytes` of queue in front of the link (tbf
 * `limit`: beyond it, arriving packets are dropped); `burstBytes` the token bucket. A router
 * sends at its link's rate, but tbf lets a full bucket through at the veth's speed, which a
 * sender measures as a burst of far more bandwidth than the link has; so the bucket defaults to
 * 2 ms of the rate (at least 3000 bytes, two packets), the least that still reaches the rate.
 * @typedef {{ rateMbit: number, queueBytes: number, burstBytes?: number }} Shape
 */

export class TwoHosts {
  /** The veth end in each namespace has this name. */
  static DEV = "aw0";

  /**
   * Creates the namespaces `aw-<tag>-<pid>-c` / `-s` and the link between them, up, unshaped.
   * @param {string} tag
   * @param {number} subnet the link is 10.<subnet>.0.0/24 (client .1, server .2) and
   *   fd00:<subnet>::/64 (client ::1, server ::2)
   */
  constructor(tag, subnet) {
    removeStale();
    this.client = `aw-${tag}-${process.pid}-c`;
    this.server = `aw-${tag}-${process.pid}-s`;
    this.clientIp = `10.${subnet}.0.1`;
    this.serverIp = `10.${subnet}.0.2`;
    this.clientIp6 = `fd00:${subnet}::1`;
    this.serverIp6 = `fd00:${subnet}::2`;
    try {
      ip(["netns", "add", this.client]);
      ip(["netns", "add", this.server]);
      ip(["link", "add", TwoHosts.DEV, "netns", this.client, "type", "veth", "peer", "name", TwoHosts.DEV, "netns", this.server]);
      for (const [ns, addr, addr6] of [[this.client, this.clientIp, this.clientIp6], [this.server, this.serverIp, this.serverIp6]]) {
        ip(["-n", ns, "addr", "add", `${addr}/24`, "dev", TwoHosts.DEV]);
        // nodad: usable at once, without IPv6 duplicate address detection's wait.
        ip(["-n", ns, "addr", "add", `${addr6}/64`, "dev", TwoHosts.DEV, "nodad"]);
        ip(["-n", ns, "link", "set", "lo", "up"]);
        ip(["-n", ns, "link", "set", TwoHosts.DEV, "up"]);
      }
    } catch (error) {
      this.close(); // what was created so far: the caller never gets the object to close
      throw error;
    }
  }

  /**
   * Puts (or changes) the same bottleneck on both directions.
   * @param {Shape} s
   */
  shape(s) {
    for (const ns of [this.client, this.server]) {
      inNs(ns, ["tc", "qdisc", "replace", "dev", TwoHosts.DEV, "root", "tbf", "rate", `${s.rateMbit}mbit`, "burst", String(s.burstBytes ?? Math.max(3000, Math.ceil((s.rateMbit * 1e6 * 0.002) / 8))), "limit", String(s.queueBytes)]);
    }
  }

  /**
   * Sets the link MTU (IP bytes) on both ends.
   * @param {number} bytes
   */
  mtu(bytes) {
    for (const ns of [this.client, this.server]) ip(["-n", ns, "link", "set", TwoHosts.DEV, "mtu", String(bytes)]);
  }

  /**
   * A silent black hole for large datagrams: each host's nftables input drops every UDP datagram
   * with more than `payloadBytes` of payload, both families, and sends no ICMP (a middlebox that
   * discards what it cannot carry). The link's MTU stays as it is, so the senders' kernels never
   * learn of it. Needs nft.
   * @param {number} payloadBytes
   */
  dropUdpLargerThan(payloadBytes) {
    for (const ns of [this.client, this.server]) {
      inNs(ns, ["nft", "add", "table", "inet", "aw_black_hole"]);
      inNs(ns, ["nft", "add", "chain", "inet", "aw_black_hole", "in", "{ type filter hook input priority 0 ; }"]);
      // UDP's length field counts its 8 header bytes.
      inNs(ns, ["nft", "add", "rule", "inet", "aw_black_hole", "in", "udp", "length", ">", String(payloadBytes + 8), "counter", "drop"]);
    }
  }

  /**
   * Datagrams the black hole of `ns` (dropUdpLargerThan) has dropped so far.
   * @param {string} ns
   * @returns {number}
   */
  blackHoleDrops(ns) {
    const m = /counter packets (\d+)/.exec(inNs(ns, ["nft", "list", "chain", "inet", "aw_black_hole", "in"]));
    return m === null ? 0 : Number(m[1]);
  }

  /**
   * Packets the bottleneck queue of `ns`'s direction has sent and dropped so far.
   * @param {string} ns
   * @returns {{ sent: number, dropped: number }}
   */
  queueStats(ns) {
    const text = inNs(ns, ["tc", "-s", "qdisc", "show", "dev", TwoHosts.DEV]);
    const m = /Sent \d+ bytes (\d+) pkt \(dropped (\d+)/.exec(text);
    if (m === null) throw new Error(`unexpected tc output: ${text}`);
    return { sent: Number(m[1]), dropped: Number(m[2]) };
  }

  /**
   * The `Ip:` counters of /proc/net/snmp in `ns` (e.g. FragCreates: fragments the kernel made).
   * @param {string} ns
   * @returns {Record<string, number>}
   */
  ipCounters(ns) {
    const lines = inNs(ns, ["cat", "/proc/net/snmp"]).split("\n").filter((l) => l.startsWith("Ip:"));
    const names = lines[0].split(/\s+/).slice(1);
    const values = lines[1].split(/\s+/).slice(1).map(Number);
    return Object.fromEntries(names.map((n, i) => [n, values[i]]));
  }

  /**
   * The IPv6 counters of /proc/net/snmp6 in `ns` (e.g. Ip6FragCreates).
   * @param {string} ns
   * @returns {Record<string, number>}
   */
  ip6Counters(ns) {
    const out = {};
    for (const line of inNs(ns, ["cat", "/proc/net/snmp6"]).split("\n")) {
      const [name, value] = line.trim().split(/\s+/);
      if (name) out[name] = Number(value);
    }
    return out;
  }

  close() {
    for (const ns of [this.client, this.server]) {
      try {
        ip(["netns", "del", ns]);
      } catch {
        // already gone
      }
    }
  }
}

/** Deletes namespaces (`aw-<tag>-<pid>-<role>`) left by processes that no longer exist (a run killed mid-test). */
export function removeStale() {
  for (const line of ip(["netns", "list"]).split("\n")) {
    const m = /^(aw-[a-z0-9]+-(\d+)-[a-z]+)\b/.exec(line);
    if (m === null) continue;
    try {
      process.kill(Number(m[2]), 0);
    } catch (error) {
      if (error.code !== "ESRCH") continue; // EPERM: the process exists
      try {
        ip(["netns", "del", m[1]]);
      } catch {
        // raced with another cleaner
      }
    }
  }
}
