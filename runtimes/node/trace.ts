/**
 * qlogFiles(dir): an EndpointConfig.trace factory that writes each connection's qlog trace to
 * `dir/<vantage>-<connection id>-<ms since 1970>.sqlog` (JSON-SEQ; qvis opens it). Writes are
 * synchronous, in chunks of ~16 KB (the tracer buffers), so a crash loses at most the last
 * chunk. A file that cannot be written stops being traced; the connection goes on.
 */
import type { TraceFactory } from "../../src/trace/qlog.js";

interface NodeFs {
  mkdirSync(path: string, options: { recursive: boolean }): unknown;
  openSync(path: string, flags: string): number;
  writeSync(fd: number, text: string): number;
  closeSync(fd: number): void;
}

interface BuiltinHost {
  process?: { getBuiltinModule?(id: string): unknown };
}

function nodeFs(): NodeFs {
  const fs = (globalThis as BuiltinHost).process?.getBuiltinModule?.("node:fs") as NodeFs | undefined;
  if (fs === undefined) throw new Error("qlogFiles needs process.getBuiltinModule (Node 20.16+, Bun, Deno 2)");
  return fs;
}

export function qlogFiles(dir: string): TraceFactory {
  const fs = nodeFs();
  fs.mkdirSync(dir, { recursive: true });
  return (start) => {
    const path = `${dir}/${start.vantage}-${start.connection}-${Date.now()}.sqlog`;
    let fd = fs.openSync(path, "w");
    return {
      write(chunk: string): void {
        if (fd < 0) return;
        try {
          fs.writeSync(fd, chunk);
        } catch {
          try {
            fs.closeSync(fd);
          } catch {
            // already unusable
          }
          fd = -1;
        }
      },
      close(): void {
        if (fd < 0) return;
        fs.closeSync(fd);
        fd = -1;
      },
    };
  };
}
