// A lab for floods from forged source addresses: two network namespaces (`aw-spf<tag>-<pid>-a`,
// the attacker's, and `-s`, the server's) joined by a veth pair on 10.77.0.0/16, the attacker
// at 10.77.0.1 and the server at 10.77.0.2. The attacker's raw socket forges sources from
// 10.77.1.0 up: addresses of the link's own subnet that nobody holds, so the server's replies
// to them go out (and are counted) and die unanswered at ARP. nftables in the server's
// namespace counts the UDP bytes in and out of its ports. Needs root, iproute2, nft and
// python3; `spoofLabUnsupported()` says why not otherwise. Nothing leaves the namespaces.
import { execFileSync } from "node:child_process";
import { inNs, ip, probeNamespace, removeStale } from "./netns.mjs";

/** @type {string | null | undefined} */
let unsupported;

/**
 * Why the lab cannot run here, or undefined if it can. Probed once.
 * @returns {string | undefined}
 */
export function spoofLabUnsupported() {
  unsupported ??=
    probeNamespace(
      "spf",
      (name) => {
        execFileSync("ip", ["netns", "exec", name, "nft", "-f", "-"], { input: "add table inet probe\n", stdio: ["pipe", "pipe", "pipe"] });
        // A raw socket that may forge the IP header: needs CAP_NET_RAW.
        execFileSync("ip", ["netns", "exec", name, "python3", "-c", "import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW).close()"], { stdio: "pipe" });
      },
      "network namespaces with nftables and raw sockets are not available (root, iproute2, nft and python3 needed)",
    ) ?? null;
  return unsupported ?? undefined;
}

export class SpoofLab {
  static DEV = "aw0";

  /**
   * @param {string} tag short, [a-z0-9]
   * @param {number} ports the first of the server's UDP ports counted (ports..ports+9)
   */
  constructor(tag, ports) {
    removeStale();
    this.attacker = `aw-spf${tag}-${process.pid}-a`;
    this.server = `aw-spf${tag}-${process.pid}-s`;
    this.attackerIp = "10.77.0.1";
    this.serverIp = "10.77.0.2";
    try {
      ip(["netns", "add", this.attacker]);
      ip(["netns", "add", this.server]);
      ip(["link", "add", SpoofLab.DEV, "netns", this.attacker, "type", "veth", "peer", "name", SpoofLab.DEV, "netns", this.server]);
      for (const [ns, addr] of [[this.attacker, this.attackerIp], [this.server, this.serverIp]]) {
        ip(["-n", ns, "addr", "add", `${addr}/16`, "dev", SpoofLab.DEV]);
        ip(["-n", ns, "link", "set", "lo", "up"]);
        ip(["-n", ns, "link", "set", SpoofLab.DEV, "up"]);
      }
      const range = `${ports}-${ports + 9}`;
      const script = [
        "table inet acct {",
        `  counter udp_in {}`,
        `  counter udp_out {}`,
        `  chain in { type filter hook input priority 0; udp dport ${range} counter name udp_in; }`,
        `  chain out { type filter hook output priority 0; udp sport ${range} counter name udp_out; }`,
        "}",
        "",
      ].join("\n");
      execFileSync("ip", ["netns", "exec", this.server, "nft", "-f", "-"], { input: script, stdio: ["pipe", "pipe", "pipe"] });
    } catch (error) {
      this.close();
      throw error;
    }
  }

  /**
   * `count` forged source addresses: 10.77.1.0, 10.77.1.1, ... (nobody holds them).
   * @param {number} count at most 65000
   */
  sources(count) {
    return Array.from({ length: count }, (_, i) => `10.77.${1 + (i >> 8)}.${i & 255}`);
  }

  /**
   * Gives the server's namespace a neighbor entry for each address, to a MAC nobody has, so its
   * replies to them leave at once, as replies to forged sources beyond a router do. Without
   * entries the kernel holds each reply in the address's ARP queue until resolution fails
   * (seconds), charged to the sending socket: a flood from unresolvable on-link sources fills
   * the server socket's send buffer and stalls its sends to everyone.
   * @param {string[]} addresses
   */
  resolve(addresses) {
    const lines = addresses.map((a) => `neigh replace ${a} lladdr 02:00:5e:00:53:01 dev ${SpoofLab.DEV} nud permanent`).join("\n");
    execFileSync("ip", ["-n", this.server, "-batch", "-"], { input: `${lines}\n`, stdio: ["pipe", "pipe", "pipe"] });
  }

  /**
   * UDP packets and IP bytes to and from the server's counted ports so far.
   * @returns {{ in: { packets: number, bytes: number }, out: { packets: number, bytes: number } }}
   */
  udpCounters() {
    const text = inNs(this.server, ["nft", "list", "counters", "table", "inet", "acct"]);
    const read = (name) => {
      const m = new RegExp(`counter ${name} \\{\\s*packets (\\d+) bytes (\\d+)`).exec(text);
      if (m === null) throw new Error(`unexpected nft output: ${text}`);
      return { packets: Number(m[1]), bytes: Number(m[2]) };
    };
    return { in: read("udp_in"), out: read("udp_out") };
  }

  close() {
    for (const ns of [this.attacker, this.server]) {
      try {
        ip(["netns", "del", ns]);
      } catch {
        // already gone
      }
    }
  }
}
