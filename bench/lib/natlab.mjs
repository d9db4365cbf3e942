// Real NATs for the NAT traversal tests: two home networks behind two Linux routers that
// masquerade (the kernel's own NAT, nftables), and an "internet" between them where the lobby
// runs. Needs root, iproute2 and nft; `natLabUnsupported()` says why not otherwise. Nothing
// leaves the namespaces: their only links are the veth pairs between them.
//
//   host A 10.1.0.2 --+
//   host C 10.1.0.3 --+- 10.1.0.1 [router A] 198.51.100.2 --- 198.51.100.1 [internet] 203.0.113.1
//   host B 10.2.0.2 ----- 10.2.0.1 [router B] 203.0.113.2 -----------------------------------+
//   the lobby: 192.0.2.1 on the internet's loopback
//
// Router A does not hairpin: host C's packets to A's public address reach the router itself,
// not host A, so two players on one home network find each other by their local addresses.
//
// The lobby binds its own address: a socket bound to 0.0.0.0 there would answer router B from
// 203.0.113.1 (the kernel picks the source by route), which B's NAT rightly drops.
// Each router keeps a host's source port where it can (endpoint-independent mapping), and drops
// any packet from outside that belongs to no mapping (address-and-port-dependent filtering):
// that is `masquerade` plus an input rule dropping new connections from the outside link, as
// home routers are configured. The drop matters on Linux: a stray packet the router let reach
// its own stack would leave a conntrack entry that makes the host's later mapping to that peer
// take another port. `symmetric` routers give every destination a random port instead
// (`masquerade random`, endpoint-dependent mapping), which hole punching cannot get through.
import { execFileSync } from "node:child_process";
import { ip, probeNamespace, removeStale } from "./netns.mjs";

/** @type {string | null | undefined} */
let unsupported;

/**
 * Why the NAT lab cannot run here, or undefined if it can. Probed once.
 * @returns {string | undefined}
 */
export function natLabUnsupported() {
  unsupported ??=
    probeNamespace(
      "nat",
      (name) => nft(name, "add table ip probe\nadd chain ip probe post { type nat hook postrouting priority 100; }\nadd rule ip probe post masquerade random\n"),
      "network namespaces with nftables NAT are not available (root, iproute2 and nft needed)",
    ) ?? null;
  return unsupported ?? undefined;
}

/**
 * @param {string} ns
 * @param {string} script an nft script
 */
function nft(ns, script) {
  execFileSync("ip", ["netns", "exec", ns, "nft", "-f", "-"], { input: script, stdio: ["pipe", "pipe", "pipe"] });
}

/** @param {string} ns @param {string} key @param {string} value */
function sysctl(ns, key, value) {
  execFileSync("ip", ["netns", "exec", ns, "sysctl", "-q", "-w", `${key}=${value}`], { stdio: "pipe" });
}

export class NatLab {
  /**
   * @param {string} tag short, [a-z0-9]
   * @param {{ symmetricB?: boolean }} [options] router B maps every destination to its own port
   */
  constructor(tag, options = {}) {
    removeStale();
    const base = `aw-${tag}-${process.pid}`;
    this.internet = `${base}-net`;
    this.routerA = `${base}-ra`;
    this.routerB = `${base}-rb`;
    this.hostA = `${base}-ha`;
    this.hostB = `${base}-hb`;
    this.hostC = `${base}-hc`;
    this.lobbyIp = "192.0.2.1";
    this.publicA = "198.51.100.2";
    this.publicB = "203.0.113.2";
    this.localA = "10.1.0.2";
    this.localB = "10.2.0.2";
    this.localC = "10.1.0.3";
    /** @type {string[]} */
    this.created = [];
    try {
      for (const ns of [this.internet, this.routerA, this.routerB, this.hostA, this.hostB, this.hostC]) {
        ip(["netns", "add", ns]);
        this.created.push(ns);
        ip(["-n", ns, "link", "set", "lo", "up"]);
      }
      this.#link(this.internet, "wa", "198.51.100.1/24", this.routerA, "wan", "198.51.100.2/24");
      this.#link(this.internet, "wb", "203.0.113.1/24", this.routerB, "wan", "203.0.113.2/24");
      // Router A's home network is a bridge with two hosts on it.
      ip(["-n", this.routerA, "link", "add", "lan", "type", "bridge"]);
      ip(["-n", this.routerA, "addr", "add", "10.1.0.1/24", "dev", "lan"]);
      ip(["-n", this.routerA, "link", "set", "lan", "up"]);
      this.#link(this.routerA, "lan-a", undefined, this.hostA, "eth0", "10.1.0.2/24");
      this.#link(this.routerA, "lan-c", undefined, this.hostC, "eth0", "10.1.0.3/24");
      for (const port of ["lan-a", "lan-c"]) ip(["-n", this.routerA, "link", "set", port, "master", "lan"]);
      ip(["-n", this.hostC, "route", "add", "default", "via", "10.1.0.1"]);
      this.#link(this.routerB, "lan", "10.2.0.1/24", this.hostB, "eth0", "10.2.0.2/24");
      ip(["-n", this.internet, "addr", "add", `${this.lobbyIp}/32`, "dev", "lo"]);
      sysctl(this.internet, "net.ipv4.ip_forward", "1");
      for (const [router, upstream, host, gateway, symmetric] of [
        [this.routerA, "198.51.100.1", this.hostA, "10.1.0.1", false],
        [this.routerB, "203.0.113.1", this.hostB, "10.2.0.1", options.symmetricB === true],
      ]) {
        sysctl(router, "net.ipv4.ip_forward", "1");
        ip(["-n", router, "route", "add", "default", "via", upstream]);
        ip(["-n", host, "route", "add", "default", "via", gateway]);
        nft(
          router,
          [
            "table ip nat {",
            "  chain post { type nat hook postrouting priority 100; oifname \"wan\" masquerade" + (symmetric ? " random" : "") + "; }",
            "}",
            "table ip filter {",
            "  chain input { type filter hook input priority 0; iifname \"wan\" ct state new counter drop; }",
            "  chain forward { type filter hook forward priority 0; iifname \"wan\" ct state new counter drop; }",
            "}",
            "",
          ].join("\n"),
        );
      }
    } catch (error) {
      this.close();
      throw error;
    }
  }

  /**
   * @param {string} nsA @param {string} devA @param {string | undefined} addrA none: a bridge port
   * @param {string} nsB @param {string} devB @param {string} addrB
   */
  #link(nsA, devA, addrA, nsB, devB, addrB) {
    ip(["link", "add", devA, "netns", nsA, "type", "veth", "peer", "name", devB, "netns", nsB]);
    if (addrA !== undefined) ip(["-n", nsA, "addr", "add", addrA, "dev", devA]);
    ip(["-n", nsB, "addr", "add", addrB, "dev", devB]);
    ip(["-n", nsA, "link", "set", devA, "up"]);
    ip(["-n", nsB, "link", "set", devB, "up"]);
  }

  /**
   * Packets router `ns`'s filter dropped at its outside link (unsolicited, or not yet punched).
   * @param {string} ns
   * @returns {number}
   */
  droppedAt(ns) {
    const text = execFileSync("ip", ["netns", "exec", ns, "nft", "list", "table", "ip", "filter"], { stdio: "pipe" }).toString();
    let packets = 0;
    for (const m of text.matchAll(/counter packets (\d+)/g)) packets += Number(m[1]);
    return packets;
  }

  close() {
    for (const ns of this.created) {
      try {
        ip(["netns", "del", ns]);
      } catch {
        // already gone
      }
    }
    this.created = [];
  }
}
