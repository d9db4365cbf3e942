import { build } from "esbuild";
import { gzipSync } from "node:zlib";
import { readFileSync } from "node:fs";
const root = "/work/main";
const stubs = process.argv.slice(2);
const plug = { name: "stubs", setup(b) {
  b.onLoad({ filter: /wasm-bytes-release\.generated\.js$/ }, () => ({ loader: "js", contents: "export const WASM_RELEASE_BASE64 = '';" }));
  for (const s of ["ts-engine", "qlog", "pending-accepts", ...stubs]) b.onLoad({ filter: new RegExp(`[\\\\/]${s}\\.js$`) }, () => ({ loader: "js", contents: "export class TsEngine{} export class QlogTracer{} export class PendingAccepts{} export class ParitySender{} export class ParityReceiver{} export class BinaryController{} export const ParityOutcome={}; export function isThenable(){}" }));
}};
const r = await build({ entryPoints: [root + "/dist/src/browser/index.js"], bundle: true, format: "esm", platform: "browser", target: "es2022", minify: true, write: false, plugins: [plug], logLevel: "error" });
const js = r.outputFiles[0].contents;
console.log(stubs.join(",") || "(none)", js.length, gzipSync(js, { level: 9 }).length);
