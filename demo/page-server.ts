/**
 * A loopback HTTP server for a web page and the bundled browser client (dist/browser/, built by
 * scripts/build.mjs): the browser tests, the browser benchmark and `npm start -- --browser`
 * serve their page with it. Node's http module (Node, Bun and Deno have it).
 */
import { createServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";

/** dist/browser/, next to this module's dist/demo/. */
const BUNDLE_DIR = fileURLToPath(new URL("../browser/", import.meta.url));

export interface PageServer {
  /** The page's origin, e.g. "http://127.0.0.1:41234": list it in the server's webrtc.allowOrigins. */
  readonly origin: string;
  close(): Promise<void>;
}

/** Serves `html` at "/" and the bundles (and engine.wasm beside them) at "/ackwire/<file>.js" (ackwire/browser: "/ackwire/ackwire.js"; ackwire/browser/secure: "/ackwire/secure/ackwire.js"). */
export async function servePage(html: string | (() => string), host = "127.0.0.1"): Promise<PageServer> {
  const http: HttpServer = createServer((request, response) => {
    const path = (request.url ?? "/").split("?", 1)[0]!;
    if (path === "/") {
      response.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" });
      response.end(typeof html === "string" ? html : html());
      return;
    }
    const match = /^\/ackwire\/((?:secure\/)?[A-Za-z0-9._-]+\.(js|wasm))$/.exec(path);
    if (match === null) {
      response.writeHead(404).end();
      return;
    }
    readFile(BUNDLE_DIR + match[1]).then(
      (body) => {
        response.writeHead(200, { "content-type": match[2] === "wasm" ? "application/wasm" : "text/javascript; charset=utf-8", "cache-control": "no-store" });
        response.end(body);
      },
      () => response.writeHead(404).end(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(0, host, () => resolve());
  });
  const { port } = http.address() as AddressInfo;
  return {
    origin: `http://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections?.();
      }),
  };
}
