#!/usr/bin/env node
// npm's `prepare` step: the node22 and node24 devDependencies (Node's own binaries, for
// scripts/test.mjs) both declare a `node` bin, so npm links node_modules/.bin/node to one of
// them, and every npm script, npx and vitest (`#!/usr/bin/env node`) would then run on that
// Node instead of the machine's. This removes that link; the binaries stay where
// scripts/test.mjs calls them (node_modules/node22/bin/node, node_modules/node24/bin/node).
import { lstatSync, readlinkSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const link = join(dirname(fileURLToPath(import.meta.url)), "..", "node_modules", ".bin", "node");
let target;
try {
  target = lstatSync(link).isSymbolicLink() ? readlinkSync(link) : undefined;
} catch {
  target = undefined;
}
// Only the link into one of the binary packages: never anything else named node.
if (target !== undefined && /^\.\.\/node2[24]\//.test(target)) {
  rmSync(link);
  console.log(`prepare: removed node_modules/.bin/node (-> ${target}), the node22/node24 devDependencies' bin`);
}
