/**
 * Kernel socket buffer sizes for Bun.udpSocket, which has no option for them (Bun's node:dgram
 * `setRecvBufferSize` is a no-op too). Left at the kernel default (Linux: 208 KiB, about 92
 * datagrams of 1000 B by their in-kernel size), a burst of a reliable window overflows the
 * receive buffer and the kernel drops the rest (counted in /proc/net/snmp RcvbufErrors), which
 * the sender then pays for in resends. So the adapter sets SO_RCVBUF/SO_SNDBUF itself, on the
 * socket's `fd`, through bun:ffi's setsockopt from libc, as node:dgram's setRecvBufferSize does
 * on Node (the kernel caps the size at net.core.rmem_max / wmem_max).
 *
 * Best effort: on a platform without known constants, without bun:ffi, or when libc cannot be
 * opened, the socket keeps the default buffers and works as before.
 */
import { importNodeModule } from "../node/socket.js";

interface BunFfi {
  dlopen(path: string, symbols: Record<string, { args: string[]; returns: string }>): { symbols: Record<string, (...args: unknown[]) => number> };
  ptr(view: ArrayBufferView): unknown;
}

/** SOL_SOCKET, SO_SNDBUF, SO_RCVBUF and where libc is, per platform. */
const PLATFORMS: Record<string, { libc: string; solSocket: number; soSndbuf: number; soRcvbuf: number } | undefined> = {
  linux: { libc: "libc.so.6", solSocket: 1, soSndbuf: 7, soRcvbuf: 8 },
  darwin: { libc: "libc.dylib", solSocket: 0xffff, soSndbuf: 0x1001, soRcvbuf: 0x1002 },
};

type SetBuffer = (fd: number, which: "receive" | "send", bytes: number) => boolean;

let loading: Promise<SetBuffer | undefined> | undefined;

async function load(): Promise<SetBuffer | undefined> {
  const platform = (globalThis as unknown as { process?: { platform?: string } }).process?.platform ?? "";
  const consts = PLATFORMS[platform];
  if (consts === undefined) return undefined;
  try {
    const ffi = await importNodeModule<BunFfi>("bun:ffi");
    const libc = ffi.dlopen(consts.libc, { setsockopt: { args: ["i32", "i32", "i32", "ptr", "u32"], returns: "i32" } });
    const setsockopt = libc.symbols.setsockopt!;
    return (fd, which, bytes) => {
      const value = new Int32Array([bytes]);
      return setsockopt(fd, consts.solSocket, which === "receive" ? consts.soRcvbuf : consts.soSndbuf, ffi.ptr(value), 4) === 0;
    };
  } catch {
    return undefined;
  }
}

/** Requests the kernel buffer sizes for the socket `fd`; false where that is not possible. */
export async function setSocketBuffers(fd: number | undefined, receiveBytes: number | undefined, sendBytes: number | undefined): Promise<boolean> {
  if (typeof fd !== "number" || fd < 0 || (!receiveBytes && !sendBytes)) return false;
  const set = await (loading ??= load());
  if (set === undefined) return false;
  try {
    let ok = true;
    if (receiveBytes) ok = set(fd, "receive", receiveBytes) && ok;
    if (sendBytes) ok = set(fd, "send", sendBytes) && ok;
    return ok;
  } catch {
    return false;
  }
}
