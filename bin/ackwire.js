#!/usr/bin/env node
// `npx ackwire proxy ...` — the command-line entry; the code lives in runtimes/node/cli.ts.
import { main } from "../dist/runtimes/node/cli.js";

process.exitCode = await main(process.argv.slice(2));
