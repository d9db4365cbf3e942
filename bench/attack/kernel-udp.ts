// A UDP socket's kernel counters on Linux (/proc/net/udp, /proc/net/udp6): the bytes waiting in
// its receive queue (each datagram counted at its buffer's true size, so ~2 KiB or more for a
// 1200 B datagram) and the datagrams the kernel dropped because that queue was full.
import { existsSync, readFileSync } from "node:fs";

export interface KernelUdpStats {
  rxQueueBytes: number;
  drops: number;
}

const TABLES = ["/proc/net/udp", "/proc/net/udp6"];

/** The socket bound to local `port`; undefined where the tables are not there (not Linux). */
export function kernelUdpStats(port: number): KernelUdpStats | undefined {
  for (const table of TABLES) {
    if (!existsSync(table)) continue;
    const lines = readFileSync(table, "utf8").split("\n");
    for (let i = 1; i < lines.length; i++) {
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ref pointer drops
      const f = lines[i]!.trim().split(/\s+/);
      if (f.length < 13 || parseInt(f[1]!.split(":")[1]!, 16) !== port) continue;
      return { rxQueueBytes: parseInt(f[4]!.split(":")[1]!, 16), drops: Number(f[12]) };
    }
  }
  return undefined;
}
