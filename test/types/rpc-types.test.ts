// Typed RPC at the type level: compiles test/types/rpc-types.check.ts with the TypeScript
// compiler (the project's options). It must compile as written: every `@ts-expect-error` line
// fails to compile (else tsc reports the unused directive) and the inferred types are the ones
// its `Expect<Equal<...>>` lines name. The same file with the directives removed must fail at
// exactly those lines, so none of them errs for a reason of its own elsewhere.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const HERE = dirname(fileURLToPath(import.meta.url));
const CHECK = join(HERE, "rpc-types.check.ts");
const STRIPPED = join(HERE, "rpc-types.stripped.check.ts"); // served from memory, never written

function compile(): { asWritten: ts.Diagnostic[]; stripped: ts.Diagnostic[]; directiveLines: number[] } {
  const config = ts.getParsedCommandLineOfConfigFile(join(HERE, "tsconfig.json"), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => { throw new Error(ts.flattenDiagnosticMessageText(d.messageText, "\n")); } })!;
  const source = ts.sys.readFile(CHECK)!;
  const lines = source.split("\n");
  const directiveLines: number[] = [];
  // The line after each directive is the one that must fail (0-based line numbers).
  lines.forEach((line, i) => line.trim().startsWith("// @ts-expect-error") && directiveLines.push(i + 1));
  const stripped = lines.map((line) => (line.trim().startsWith("// @ts-expect-error") ? "" : line)).join("\n");
  const host = ts.createCompilerHost(config.options);
  const readFile = host.readFile.bind(host);
  host.readFile = (name) => (name === STRIPPED ? stripped : readFile(name));
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === STRIPPED || fileExists(name);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version, onError, create) => (name === STRIPPED ? ts.createSourceFile(name, stripped, version) : getSourceFile(name, version, onError, create));
  const program = ts.createProgram([CHECK, STRIPPED], { ...config.options, noEmit: true }, host);
  const of = (file: string) => ts.getPreEmitDiagnostics(program, program.getSourceFile(file));
  return { asWritten: of(CHECK), stripped: of(STRIPPED), directiveLines };
}

const text = (d: ts.Diagnostic) => {
  const where = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line + 1 : "?";
  return `${where}: ${ts.flattenDiagnosticMessageText(d.messageText, " ")}`;
};

describe("typed RPC (tsc)", () => {
  it("accepts the typed calls, rejects each wrong one at its line, and infers the results", () => {
    const { asWritten, stripped, directiveLines } = compile();
    expect(asWritten.map(text)).toEqual([]);
    expect(directiveLines.length).toBeGreaterThanOrEqual(10);
    const failing = new Set(stripped.map((d) => d.file!.getLineAndCharacterOfPosition(d.start!).line));
    expect([...failing].sort((a, b) => a - b), stripped.map(text).join("\n")).toEqual(directiveLines);
  }, 180_000);
});
