/**
 * Socket options that Bun.udpSocket has no option for, set on the socket's `fd` through bun:ffi's
 * setsockopt from libc (as node:dgram's own setters do on Node):
 *
 * - Kernel buffer sizes (SO_RCVBUF / SO_SNDBUF). Bun's node:dgram `setRecvBufferSize` is a no-op.
 *   Left at the kernel default (Linux: 208 KiB, about 92 datagrams of 1000 B by their in-kernel
 *   size), a burst of a reliable window overflows the receive buffer and the kernel drops the
 *   rest (counted in /proc/net/snmp RcvbufErrors), which the sender then pays for in resends.
 *   The kernel caps the size at net.core.rmem_max / wmem_max.
 *
 * - Don't-fragment for path MTU discovery (Linux IP_MTU_DISCOVER / IPV6_MTU_DISCOVER =
 *   IP_PMTUDISC_PROBE). By default Linux fragments a datagram larger than the MTU it knows for
 *   the route (the outgoing link's, or one learned from an ICMP "fragmentation needed"), so a
 *   too-big probe arrives in fragments and the session's discovery (docs/SESSION.md) settles on
 *   a size the path only carries fragmented. With PROBE every datagram leaves with DF set and is
 *   never fragmented: one larger than the link's MTU fails at send (EMSGSIZE), one larger than a
 *   router's next hop is dropped there, and either way the session sees a lost probe and
 *   searches below it, as RFC 8899 (DPLPMTUD) intends. This is what QUIC stacks set too.
 *   Node's and Deno's socket APIs have no way to set it (docs/SESSION.md, the caveat).
 *
 * Best effort: on a platform without known constants, without bun:ffi, or when libc cannot be
 * opened, the socket keeps the kernel's defaults and works as before.
 */
import { importNodeModule } from "../node/socket.js";

interface BunFfi {
  dlopen(path: string, symbols: Record<string, { args: string[]; returns: string }>): { symbols: Record<string, (...args: unknown[]) => number> };
  ptr(view: ArrayBufferView): unknown;
}

interface PlatformConstants {
  libc: string;
  solSocket: number;
  soSndbuf: number;
  soRcvbuf: number;
  /** [level, option, value] pairs that turn fragmentation off, IPv4 then IPv6; none where unknown. */
  noFragment?: { v4: [number, number, number]; v6: [number, number, number] };
}

const PLATFORMS: Record<string, PlatformConstants | undefined> = {
  // IPPROTO_IP 0, IP_MTU_DISCOVER 10; IPPROTO_IPV6 41, IPV6_MTU_DISCOVER 23; IP(V6)_PMTUDISC_PROBE 3.
  linux: { libc: "libc.so.6", solSocket: 1, soSndbuf: 7, soRcvbuf: 8, noFragment: { v4: [0, 10, 3], v6: [41, 23, 3] } },
  darwin: { libc: "libc.dylib", solSocket: 0xffff, soSndbuf: 0x1001, soRcvbuf: 0x1002 },
};

type SetOption = (fd: number, level: number, option: number, value: number) => boolean;

let loading: Promise<{ set: SetOption; consts: PlatformConstants } | undefined> | undefined;

async function load(): Promise<{ set: SetOption; consts: PlatformConstants } | undefined> {
  const platform = (globalThis as unknown as { process?: { platform?: string } }).process?.platform ?? "";
  const consts = PLATFORMS[platform];
  if (consts === undefined) return undefined;
  try {
    const ffi = await importNodeModule<BunFfi>("bun:ffi");
    const libc = ffi.dlopen(consts.libc, { setsockopt: { args: ["i32", "i32", "i32", "ptr", "u32"], returns: "i32" } });
    const setsockopt = libc.symbols.setsockopt!;
    const set: SetOption = (fd, level, option, value) => setsockopt(fd, level, option, ffi.ptr(new Int32Array([value])), 4) === 0;
    return { set, consts };
  } catch {
    return undefined;
  }
}

function validFd(fd: number | undefined): fd is number {
  return typeof fd === "number" && fd >= 0;
}

/** Requests the kernel buffer sizes for the socket `fd`; false where that is not possible. */
export async function setSocketBuffers(fd: number | undefined, receiveBytes: number | undefined, sendBytes: number | undefined): Promise<boolean> {
  if (!validFd(fd) || (!receiveBytes && !sendBytes)) return false;
  const lib = await (loading ??= load());
  if (lib === undefined) return false;
  const { set, consts } = lib;
  try {
    let ok = true;
    if (receiveBytes) ok = set(fd, consts.solSocket, consts.soRcvbuf, receiveBytes) && ok;
    if (sendBytes) ok = set(fd, consts.solSocket, consts.soSndbuf, sendBytes) && ok;
    return ok;
  } catch {
    return false;
  }
}

/**
 * Turns fragmentation off for the socket `fd` (see the module comment): true if the kernel took
 * the option. An IPv6 socket gets both options (it may also carry IPv4-mapped traffic); it
 * counts as done when the IPv6 one was taken.
 */
export async function setNoFragment(fd: number | undefined, ipv6: boolean): Promise<boolean> {
  if (!validFd(fd)) return false;
  const lib = await (loading ??= load());
  const noFragment = lib?.consts.noFragment;
  if (lib === undefined || noFragment === undefined) return false;
  try {
    if (!ipv6) return lib.set(fd, ...noFragment.v4);
    lib.set(fd, ...noFragment.v4);
    return lib.set(fd, ...noFragment.v6);
  } catch {
    return false;
  }
}
