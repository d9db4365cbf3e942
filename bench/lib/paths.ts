// Where things are, from the compiled output (dist/bench/lib/paths.js) back to the repo.

import { g, importDynamic, moduleUrl, type ModuleModule } from "./host.js";

/** Repository root (ends with "/"): dist/bench/lib/ -> ../../../ */
export function repoRoot(): string {
  return decodeURIComponent(new g.URL("../../../", moduleUrl(import.meta)).pathname);
}

export function benchDir(): string {
  return repoRoot() + "bench/";
}

/**
 * A CommonJS `require` rooted at bench/package.json. The peers are devDependencies of the
 * separate bench package, so Node's resolution from dist/ would never find them.
 */
export async function benchRequire(): Promise<(id: string) => unknown> {
  const mod = await importDynamic<ModuleModule>("node:module");
  return mod.createRequire(benchDir() + "package.json");
}
