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
//
// With `ipv6: true` the same topology is IPv6 the way home networks have it: no NAT, every host
// has its own global address (2001:db8:1::2, ::3 behind router A, 2001:db8:2::2 behind B; the
// lobby 2001:db8:ffff::1), and each router's firewall drops UDP packets from outside that
// belong to no flow its hosts started (the same `ct state new` rule, for UDP only, so ICMPv6
// neighbor discovery still passes). Punching is still needed.
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

/**
 * A home router's firewall: drop what comes in from outside ("wan") and belongs to no flow the
 * inside started, to the router itself or through it; counted (`droppedAt`).
 * @param {"ip" | "ip6"} family @param {string} match more of the rule, e.g. "meta l4proto udp "
 */
function firewall(family, match) {
  const rule = `iifname "wan" ct state new ${match}counter drop;`;
  return [
    `table ${family} filter {`,
    `  chain input { type filter hook input priority 0; ${rule} }`,
    `  chain forward { type filter hook forward priority 0; ${rule} }`,
    "}",
    "",
  ].join("\n");
}

/** @param {string} ns @param {string} key @param {string} value */
function sysctl(ns, key, value) {
  execFileSync("ip", ["netns", "exec", ns, "sysctl", "-q", "-w", `${key}=${value}`], { stdio: "pipe" });
}

export class NatLab {
  /**
   * @param {string} tag short, [a-z0-9]
   * @param {{ symmetricB?: boolean, ipv6?: boolean }} [options] router B maps every destination
   *   to its own port; or the IPv6 lab (no NAT, stateful firewalls)
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
    if (options.ipv6 === true) {
      this.#buildIpv6();
      return;
    }
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
            firewall("ip", ""),
          ].join("\n"),
        );
      }
    } catch (error) {
      this.close();
      throw error;
    }
  }

  #buildIpv6() {
    this.lobbyIp = "2001:db8:ffff::1";
    // No NAT: a host's public address is its own.
    this.localA = this.publicA = "2001:db8:1::2";
    this.localB = this.publicB = "2001:db8:2::2";
    this.localC = "2001:db8:1::3";
    this.ipv6 = true;
    /** @type {string[]} */
    this.created = [];
    const v6 = (ns, ...args) => ip(["-6", "-n", ns, ...args]);
    try {
      for (const ns of [this.internet, this.routerA, this.routerB, this.hostA, this.hostB, this.hostC]) {
        ip(["netns", "add", ns]);
        this.created.push(ns);
        // No duplicate address detection on the links made below, link-local addresses
        // included (neighbor discovery speaks from those): usable at once, not "tentative"
        // for 1-2 s, during which the first packets were lost.
        sysctl(ns, "net.ipv6.conf.all.accept_dad", "0");
        sysctl(ns, "net.ipv6.conf.default.accept_dad", "0");
        ip(["-n", ns, "link", "set", "lo", "up"]);
      }
      // And the global addresses without it either.
      this.#link(this.internet, "wa", "2001:db8:a::1/64", this.routerA, "wan", "2001:db8:a::2/64", true);
      this.#link(this.internet, "wb", "2001:db8:b::1/64", this.routerB, "wan", "2001:db8:b::2/64", true);
      ip(["-n", this.routerA, "link", "add", "lan", "type", "bridge"]);
      v6(this.routerA, "addr", "add", "2001:db8:1::1/64", "dev", "lan", "nodad");
      ip(["-n", this.routerA, "link", "set", "lan", "up"]);
      this.#link(this.routerA, "lan-a", undefined, this.hostA, "eth0", "2001:db8:1::2/64", true);
      this.#link(this.routerA, "lan-c", undefined, this.hostC, "eth0", "2001:db8:1::3/64", true);
      for (const port of ["lan-a", "lan-c"]) ip(["-n", this.routerA, "link", "set", port, "master", "lan"]);
      this.#link(this.routerB, "lan", "2001:db8:2::1/64", this.hostB, "eth0", "2001:db8:2::2/64", true);
      v6(this.internet, "addr", "add", `${this.lobbyIp}/128`, "dev", "lo");
      sysctl(this.internet, "net.ipv6.conf.all.forwarding", "1");
      v6(this.internet, "route", "add", "2001:db8:1::/64", "via", "2001:db8:a::2");
      v6(this.internet, "route", "add", "2001:db8:2::/64", "via", "2001:db8:b::2");
      for (const [router, upstream, hosts, gateway] of [
        [this.routerA, "2001:db8:a::1", [this.hostA, this.hostC], "2001:db8:1::1"],
        [this.routerB, "2001:db8:b::1", [this.hostB], "2001:db8:2::1"],
      ]) {
        sysctl(router, "net.ipv6.conf.all.forwarding", "1");
        v6(router, "route", "add", "default", "via", upstream);
        for (const host of hosts) v6(host, "route", "add", "default", "via", gateway);
        nft(router, firewall("ip6", "meta l4proto udp "));
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
  #link(nsA, devA, addrA, nsB, devB, addrB, nodad = false) {
    const extra = nodad ? ["nodad"] : [];
    ip(["link", "add", devA, "netns", nsA, "type", "veth", "peer", "name", devB, "netns", nsB]);
    if (addrA !== undefined) ip(["-n", nsA, "addr", "add", addrA, "dev", devA, ...extra]);
    ip(["-n", nsB, "addr", "add", addrB, "dev", devB, ...extra]);
    ip(["-n", nsA, "link", "set", devA, "up"]);
    ip(["-n", nsB, "link", "set", devB, "up"]);
  }

  /**
   * Packets router `ns`'s filter dropped at its outside link (unsolicited, or not yet punched).
   * @param {string} ns
   * @returns {number}
   */
  droppedAt(ns) {
    const text = execFileSync("ip", ["netns", "exec", ns, "nft", "list", "table", this.ipv6 === true ? "ip6" : "ip", "filter"], { stdio: "pipe" }).toString();
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
