// bench/RESULTS.md is generated: the committed page equals bench/results/render.mjs's rendering
// of the committed JSON, and the renderer reads every figure from its results file (a goal
// whose path is missing, or whose figure moves across its target, changes the page).
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { render, rows, type ResultRow as Row } from "../../bench/results/render.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const results = join(root, "bench", "results");
const scratch = mkdtempSync(join(tmpdir(), "ackwire-results-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("bench/RESULTS.md", () => {
  it("is the rendering of the committed bench/results/*.json", () => {
    expect(readFileSync(join(root, "bench", "RESULTS.md"), "utf8")).toBe(render());
  });

  it("has one row per goal, each with a figure, a command and a date", () => {
    const all: Row[] = rows();
    expect(all.length).toBeGreaterThan(30);
    expect(new Set(all.map((r) => r.goal)).size).toBe(all.length);
    for (const r of all) {
      expect(r.command, r.goal).toMatch(/^(npm run |node |node_modules\/\.bin\/)/);
      expect(r.date, r.goal).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    }
  });

  it("follows the figures: a changed results file changes the page", () => {
    const dir = join(scratch, "copy");
    cpSync(results, dir, { recursive: true });
    const core = JSON.parse(readFileSync(join(dir, "core.json"), "utf8"));
    core.cpuSecondsPerSimSecond = 0.04;
    writeFileSync(join(dir, "core.json"), JSON.stringify(core));
    const cpu = rows(dir).find((r) => r.goal.startsWith("server CPU-s"))!;
    expect(cpu).toMatchObject({ figure: "0.040", met: true });
    expect(render(dir)).not.toBe(render());
    delete core.cpuSecondsPerSimSecond;
    writeFileSync(join(dir, "core.json"), JSON.stringify(core));
    expect(() => rows(dir)).toThrow(/cpuSecondsPerSimSecond/);
  });
});
