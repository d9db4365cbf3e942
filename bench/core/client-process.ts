/**
 * bench:core's clients' process, forked by core.ts: answers the server process's requests
 * (ClientHost, clients.ts) over the IPC channel, one per simulated millisecond, and exits when
 * the channel closes.
 */
import { ClientHost, type ClientRequest } from "./clients.js";

interface ChildProcess {
  on(event: "message", fn: (m: ClientRequest) => void): void;
  on(event: "disconnect", fn: () => void): void;
  send?: (m: unknown) => boolean;
  exit(code: number): never;
}
const proc = (globalThis as unknown as { process: ChildProcess }).process;
const send = proc.send;
if (send === undefined) {
  (globalThis as unknown as { console: { error(s: string): void } }).console.error("client-process: run by core.js, not directly");
  proc.exit(2);
} else {
  const host = new ClientHost();
  proc.on("message", (m) => send.call(proc, host.handle(m)));
  proc.on("disconnect", () => proc.exit(0));
}
