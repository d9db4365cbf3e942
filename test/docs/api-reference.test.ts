// The API reference (`npm run docs:api`, TypeDoc over package.json's "exports"): its {@link}s
// resolve (TypeDoc's invalidLink validation, made an error), and every internal link of the
// generated HTML points at a file that exists and, with a #fragment, at an id in that file.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const typedoc = join(root, "node_modules", "typedoc", "bin", "typedoc");
const fixtures = join(root, "test", "docs", "fixtures");
const fixtureOptions = join(fixtures, "typedoc.json");
const scratch = mkdtempSync(join(tmpdir(), "ackwire-api-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/**
 * Runs TypeDoc with the project's typedoc.json plus `args`. Link validation warnings fail the
 * run; notExported is left to the maintainers' `npm run docs:api` output (a type that is
 * referenced but not exported is an API question, not a broken link).
 */
function runTypedoc(options: string, args: string[]): { status: number | null; output: string } {
  const result = spawnSync(
    process.execPath,
    [typedoc, "--options", options, "--validation.notExported", "false",
      "--validation.invalidLink", "true", "--treatValidationWarningsAsErrors", ...args],
    { cwd: root, encoding: "utf8", timeout: 120_000 },
  );
  return { status: result.status, output: `${result.stdout}\n${result.stderr}` };
}

function htmlFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".html"))
    .map((entry) => join(entry.parentPath, entry.name));
}

const attribute = (name: string): RegExp =>
  new RegExp(`\\s${name}=(?:"([^"]*)"|'([^']*)'|([^\\s>]+))`, "g");
function values(text: string, name: string): string[] {
  return [...text.matchAll(attribute(name))].map((m) => m[1] ?? m[2] ?? m[3]);
}

/** Every internal href/src in the HTML under `dir` that does not resolve, as "from -> to". */
function brokenLinks(dir: string): { checked: number; broken: string[] } {
  const ids = new Map<string, Set<string>>();
  const idsOf = (file: string): Set<string> => {
    let set = ids.get(file);
    if (!set) {
      set = new Set(values(readFileSync(file, "utf8"), "id"));
      ids.set(file, set);
    }
    return set;
  };
  const broken: string[] = [];
  let checked = 0;
  for (const file of htmlFiles(dir)) {
    const text = readFileSync(file, "utf8");
    for (const link of [...values(text, "href"), ...values(text, "src")]) {
      if (link === "" || /^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // external (https:, mailto:)
      checked++;
      const [path, fragment] = link.split("#", 2);
      const target = path === "" ? file : resolve(dirname(file), decodeURIComponent(path));
      const from = relative(dir, file);
      if (!target.startsWith(dir) || !existsSync(target)) broken.push(`${from} -> ${link} (no file)`);
      else if (fragment && (target.endsWith(".html") || target.endsWith(".svg")) && !idsOf(target).has(decodeURIComponent(fragment)))
        broken.push(`${from} -> ${link} (no id)`);
    }
  }
  return { checked, broken };
}

describe("API reference", () => {
  it("generates from the package's exports with every link resolving", () => {
    const out = join(scratch, "api");
    const run = runTypedoc(join(root, "typedoc.json"), ["--out", out]);
    expect(run.status, run.output).toBe(0);
    for (const module of ["ackwire", "ackwire_node", "ackwire_bun", "ackwire_deno", "ackwire_testing", "ackwire_game", "ackwire_worker"])
      expect(existsSync(join(out, "modules", `${module}.html`)), module).toBe(true);
    const { checked, broken } = brokenLinks(out);
    expect(checked).toBeGreaterThan(1000);
    expect(broken.slice(0, 20)).toEqual([]);
  }, 180_000);

  it("fails on a {@link} that does not resolve", () => {
    const run = runTypedoc(fixtureOptions, ["--entryPoints", join(fixtures, "broken-link.ts"), "--emit", "none"]);
    expect(run.status, run.output).not.toBe(0);
    expect(run.output).toMatch(/NoSuchThing/);
  }, 120_000);

  it("the link checker notices a missing file and a missing id", () => {
    const site = join(scratch, "checker");
    mkdirSync(join(site, "classes"), { recursive: true });
    writeFileSync(join(site, "index.html"), '<a href="classes/A.html#m">A.m</a><a href=https://typedoc.org/>x</a><svg><use href="#i"></use></svg><g id="i"></g>');
    writeFileSync(join(site, "classes", "A.html"), "<h3 id=m>m</h3><a href='../index.html'>up</a>");
    expect(brokenLinks(site)).toEqual({ checked: 3, broken: [] });
    writeFileSync(join(site, "classes", "A.html"), '<h3 id="n">n</h3><a href="../gone.html">gone</a>');
    expect(brokenLinks(site).broken.sort()).toEqual(["classes/A.html -> ../gone.html (no file)", "index.html -> classes/A.html#m (no id)"]);
  });
});
