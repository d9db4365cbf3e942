// TypeDoc plugin: names each entry point's module by the package subpath that exports it
// ("ackwire", "ackwire/node", ...) instead of its source path, so the API reference reads the way
// an application imports it. The map follows package.json "exports".
import { readFileSync } from "node:fs";
import { Converter, ReflectionKind } from "typedoc";

const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));

/** Source path of an entry point ("src/game/index.ts") -> its subpath name ("ackwire/game"). */
function subpathNames() {
  const names = new Map();
  for (const [subpath, target] of Object.entries(pkg.exports)) {
    const built = typeof target === "string" ? target : target.import;
    if (!built?.startsWith("./dist/") || !built.endsWith(".js")) continue;
    const source = built.slice("./dist/".length, -".js".length);
    names.set(source, subpath === "." ? pkg.name : `${pkg.name}/${subpath.slice(2)}`);
  }
  return names;
}

/** @param {import("typedoc").Application} app */
export function load(app) {
  const names = subpathNames();
  app.converter.on(Converter.EVENT_RESOLVE_BEGIN, (context) => {
    for (const module of context.project.getReflectionsByKind(ReflectionKind.Module)) {
      const source = module.sources?.[0]?.fileName?.replace(/\.ts$/, "");
      const name = (source && names.get(source)) ?? names.get(`${module.name}/index`) ?? names.get(module.name);
      if (name) module.name = name;
    }
  });
}
