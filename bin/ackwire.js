#!/usr/bin/env node
// `npx ackwire proxy ...` — the command-line entry; the code lives in runtimes/node/cli.ts.
import { readFileSync } from "node:fs";

const argv = process.argv.slice(2);
if (argv.length === 1 && (argv[0] === "--version" || argv[0] === "-v")) {
  const { version } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
  console.log(version);
} else {
  const { main } = await import("../dist/runtimes/node/cli.js");
  process.exitCode = await main(argv);
}
