// The package as npm publishes it. A copy of this checkout's files as git sees them (tracked,
// plus new files not ignored: no dist/, build/ or generated modules, as in a fresh clone) is
// packed with `npm pack`, so its prepack step must build everything; then the tarball's file
// list, its imports, source maps and declarations are checked, and publint and
// @arethetypeswrong/cli (devDependencies, offline) lint the tarball itself.
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, posix } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const bin = (name: string): string => join(ROOT, "node_modules", ".bin", name);
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
  name: string;
  version: string;
  exports: Record<string, string | Record<string, string>>;
  bin: Record<string, string>;
  [key: string]: unknown;
};

let work = "";
let tarball = "";
/** The unpacked tarball (its package/ folder). */
let unpacked = "";
/** Paths in the tarball, relative to its package/ folder. */
let files: string[] = [];
/** What npm pack and its prepack build printed. */
let buildOutput = "";

/** The build (AssemblyScript and tsc) runs inside this hook: minutes on a busy 2-core machine. */
const BUILD_MS = 600_000;

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), "ackwire-pack-"));
  const copy = join(work, "checkout");
  const listed = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: ROOT, encoding: "utf8" });
  for (const path of listed.split("\0")) {
    if (path === "" || !existsSync(join(ROOT, path))) continue; // deleted, not yet staged
    mkdirSync(dirname(join(copy, path)), { recursive: true });
    copyFileSync(join(ROOT, path), join(copy, path));
  }
  expect(existsSync(join(copy, "dist")), "the copy starts without dist/").toBe(false);
  symlinkSync(join(ROOT, "node_modules"), join(copy, "node_modules"), "dir");
  const out = join(work, "out");
  mkdirSync(out);
  const pack = spawnSync("npm", ["pack", "--json", "--pack-destination", out], { cwd: copy, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: BUILD_MS, maxBuffer: 64 << 20 });
  buildOutput = pack.stdout + pack.stderr;
  expect(pack.status, buildOutput).toBe(0);
  // npm prints the lifecycle scripts' output before the JSON on stdout.
  const packed = pack.stdout;
  const [result] = JSON.parse(packed.slice(packed.indexOf("\n[") + 1)) as [{ filename: string; files: { path: string }[] }];
  files = result.files.map((f) => f.path).sort();
  tarball = join(out, result.filename);
  mkdirSync(join(work, "unpacked"));
  execFileSync("tar", ["-xzf", tarball, "-C", join(work, "unpacked")]);
  unpacked = join(work, "unpacked", "package");
  // The dependencies, where a user's install would put them.
  symlinkSync(join(ROOT, "node_modules"), join(work, "unpacked", "node_modules"), "dir");
}, BUILD_MS + 60_000);

afterAll(() => {
  if (work !== "") rmSync(work, { recursive: true, force: true });
});

const read = (path: string): string => readFileSync(join(unpacked, path), "utf8");
const shipped = (path: string): boolean => files.includes(path);

/** The export map's targets: ["./dist/src/index.js", ...] without the "./". */
function exportTargets(): string[] {
  const targets: string[] = [];
  for (const entry of Object.values(pkg.exports)) {
    for (const target of typeof entry === "string" ? [entry] : Object.values(entry)) targets.push(posix.normalize(target));
  }
  return targets;
}

/** Relative specifiers of the static imports and re-exports in a JS or .d.ts file. */
function staticImports(source: string): string[] {
  const specifiers = new Set<string>();
  for (const m of source.matchAll(/(?:^|[\s;])(?:import|export)\s[^;]*?\sfrom\s*["'](\.{1,2}\/[^"']+)["']/g)) specifiers.add(m[1]!);
  for (const m of source.matchAll(/(?:^|[\s;])import\s*["'](\.{1,2}\/[^"']+)["']/g)) specifiers.add(m[1]!);
  // Type positions in declarations: import("../x.js").Name
  for (const m of source.matchAll(/\bimport\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)\.[A-Za-z_$]/g)) specifiers.add(m[1]!);
  return [...specifiers];
}

describe("npm pack", () => {
  it("builds in prepack: a fresh checkout's tarball holds dist/ and every export map target", () => {
    expect(files).toContain("dist/src/index.js");
    for (const target of exportTargets()) expect(files, target).toContain(target);
    expect(files).toContain("bin/ackwire.js");
    expect(buildOutput).toMatch(/build: .*tsc -p tsconfig\.json/);
  });

  it("the build prints no AssemblyScript 'converge' notice (scripts/build.mjs says why converge is off)", () => {
    expect(buildOutput).toMatch(/build: .*asc --config asconfig\.json --target release/);
    expect(buildOutput).not.toMatch(/converge/i);
  });

  it("ships only what users import: no benchmarks, demo, debug engine, build stamp or tests", () => {
    const unwanted = files.filter(
      (f) =>
        f.startsWith("dist/bench/") ||
        f.startsWith("dist/demo/") ||
        f.startsWith("dist/test/") ||
        f.startsWith("test/") ||
        f.startsWith("build/") ||
        /debug/i.test(f) ||
        f === "dist/.build-stamp" ||
        f.endsWith(".wat"),
    );
    expect(unwanted).toEqual([]);
    // Every top-level entry is one `files` names (and npm's own: package.json, README, LICENSE).
    const top = [...new Set(files.map((f) => f.split("/")[0]!))].sort();
    expect(top).toEqual(["LICENSE", "README.md", "bin", "dist", "docs", "package.json"]);
    expect([...new Set(files.filter((f) => f.startsWith("dist/")).map((f) => f.split("/")[1]))].sort()).toEqual(["runtimes", "src"]);
  });

  it("every static import in the shipped JavaScript and declarations resolves to a shipped file", () => {
    const missing: string[] = [];
    const entries = [...files.filter((f) => f.endsWith(".js") || f.endsWith(".d.ts"))];
    expect(entries.length).toBeGreaterThan(100);
    for (const file of entries) {
      for (const specifier of staticImports(read(file))) {
        const target = posix.join(posix.dirname(file), specifier);
        const wanted = file.endsWith(".d.ts") ? target.replace(/\.js$/, ".d.ts") : target;
        if (!shipped(wanted)) missing.push(`${file} -> ${specifier}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("source maps carry their sources, so stack traces and debuggers need no file the package lacks", () => {
    const maps = files.filter((f) => f.endsWith(".map"));
    expect(maps.length).toBeGreaterThan(100);
    const problems: string[] = [];
    for (const map of maps) {
      const m = JSON.parse(read(map)) as { file: string; sources: string[]; sourcesContent?: (string | null)[] };
      if (!shipped(posix.join(posix.dirname(map), m.file))) problems.push(`${map}: its file ${m.file} is not shipped`);
      m.sources.forEach((source, i) => {
        if (typeof m.sourcesContent?.[i] !== "string") problems.push(`${map}: no content for ${source}`);
      });
    }
    for (const js of files.filter((f) => f.endsWith(".js") && f.startsWith("dist/"))) {
      const url = /\/\/# sourceMappingURL=(\S+)\s*$/.exec(read(js))?.[1];
      if (url !== undefined && !shipped(posix.join(posix.dirname(js), url))) problems.push(`${js}: its map ${url} is not shipped`);
    }
    expect(problems).toEqual([]);
  });

  it("holds the MIT license and says where the project lives", () => {
    const license = read("LICENSE");
    expect(license).toMatch(/^MIT License/);
    expect(license).toContain("Copyright (c) 2026 the ackwire authors");
    const packed = JSON.parse(read("package.json")) as Record<string, unknown>;
    expect(packed.license).toBe("MIT");
    expect(packed.repository).toEqual({ type: "git", url: "git+https://github.com/ackwire/ackwire.git" });
    expect(packed.homepage).toBe("https://github.com/ackwire/ackwire#readme");
    expect(packed.bugs).toEqual({ url: "https://github.com/ackwire/ackwire/issues" });
    expect(Array.isArray(packed.keywords) && packed.keywords.length).toBeGreaterThan(3);
    // No runtime dependency: the secure layer's ciphers are the package's own WebAssembly.
    expect(packed.dependencies).toBeUndefined();
  });

  it("the packed bin answers --version and --help", () => {
    const cli = join(unpacked, pkg.bin.ackwire!);
    const version = spawnSync(process.execPath, [cli, "--version"], { encoding: "utf8", timeout: 30_000 });
    expect(version.status, version.stderr).toBe(0);
    expect(version.stdout.trim()).toBe(pkg.version);
    const help = spawnSync(process.execPath, [cli, "--help"], { encoding: "utf8", timeout: 30_000 });
    expect(help.status, help.stderr).toBe(0);
    expect(help.stdout).toContain("ackwire proxy");
  });

  it("keeps @internal members out of the declarations, and the declarations check without them", () => {
    // Two known internals: a public class's member and a module's test hook.
    expect(readFileSync(join(ROOT, "src", "api", "connection.ts"), "utf8")).toMatch(/@internal[^\n]*\*\/\n\s*_dispatch\(/);
    expect(readFileSync(join(ROOT, "src", "channels", "receive-copy.ts"), "utf8")).toMatch(/@internal[^\n]*\*\/\nexport function resetSlab\(/);
    expect(read("dist/src/api/connection.js")).toContain("_dispatch(");
    expect(read("dist/src/api/connection.d.ts")).toContain("class Connection");
    expect(read("dist/src/api/connection.d.ts")).not.toContain("_dispatch");
    expect(read("dist/src/channels/receive-copy.d.ts")).not.toContain("resetSlab");
    // A user's project that imports every entry point and checks the libraries' types too: a
    // public declaration that names a stripped one fails here.
    const app = join(work, "app");
    mkdirSync(app);
    const subpaths = Object.keys(pkg.exports).filter((s) => s !== "./package.json");
    writeFileSync(join(app, "index.ts"), subpaths.map((s, i) => `import * as m${i} from "${posix.join(pkg.name, s)}";\nexport { m${i} };\n`).join(""));
    writeFileSync(
      join(app, "tsconfig.json"),
      JSON.stringify({
        // No @types/node, no DOM: the declarations must stand on ES2022 alone, on any runtime.
        compilerOptions: { target: "ES2022", lib: ["ES2022"], module: "NodeNext", moduleResolution: "NodeNext", strict: true, noEmit: true, skipLibCheck: false, types: [] },
        files: ["index.ts"],
      }),
    );
    mkdirSync(join(app, "node_modules"));
    symlinkSync(unpacked, join(app, "node_modules", pkg.name), "dir");
    const tsc = spawnSync(bin("tsc"), ["-p", app], { encoding: "utf8", timeout: 180_000 });
    expect(tsc.status, tsc.stdout + tsc.stderr).toBe(0);
  }, 200_000);

  it("publint --strict finds nothing", () => {
    const run = spawnSync(bin("publint"), ["run", tarball, "--strict"], { encoding: "utf8", timeout: 120_000 });
    expect(run.status, run.stdout + run.stderr).toBe(0);
  }, 150_000);

  it("@arethetypeswrong/cli finds nothing with the ESM-only profile", () => {
    // --no-definitely-typed: look for no @types package on the registry (the test runs offline).
    const run = spawnSync(bin("attw"), [tarball, "--profile", "esm-only", "--no-definitely-typed", "--no-color", "--no-emoji"], { encoding: "utf8", timeout: 120_000 });
    expect(run.status, run.stdout + run.stderr).toBe(0);
    // Its table: one row per entry point, "OK" under node16 (from ESM) and bundler.
    const rows = run.stdout.split("\n").filter((l) => l.startsWith("│ \"ackwire"));
    expect(rows.length, run.stdout).toBe(Object.keys(pkg.exports).length);
    for (const row of rows) expect(row.split("│").slice(2, 4).map((c) => c.trim().slice(0, 2)), row).toEqual(["OK", "OK"]);
  }, 150_000);
});
