import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { importCensus } from "../../infra/ci/import-graph.ts";

const LIB = join(dirname(fileURLToPath(import.meta.url)), "../../lib");

/** readmeLayers reads lib/README.md's numbered list, one folder per line, bottom first. */
function readmeLayers(readme: string): string[][] {
  return [...readme.matchAll(/^\d+\. `([a-z0-9-]+)\/`/gm)].map((m) => [m[1] as string]);
}

describe("lib's layers (lib/README.md)", () => {
  const layers = readmeLayers(readFileSync(join(LIB, "README.md"), "utf8"));
  const census = importCensus(LIB, layers);

  it("lists every folder of lib once", () => {
    expect(layers.length).toBeGreaterThan(10);
    expect(new Set(layers.flat()).size).toBe(layers.length);
    expect(census.unlayered).toEqual([]);
  });

  it("has no import from a folder to one at or above its own line", () => {
    expect(census.upward.map((e) => `${e.from} -> ${e.to}`)).toEqual([]);
  });

  it("has no loop between folders or between files", () => {
    expect(census.folderLoops).toEqual([]);
    expect(census.fileLoops).toEqual([]);
  });
});

describe("importCensus", () => {
  const root = mkdtempSync(join(tmpdir(), "import-census-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  };
  write("base/a.ts", 'import { b } from "./b.ts";\nexport const a = b;\n');
  write("base/b.ts", 'import type { A } from "./c.ts";\nexport const b = 1;\n');
  write("base/c.ts", 'export { a } from "./a.ts";\nexport type A = number;\n');
  write("domain/d.ts", 'import { a } from "../base/a.ts";\nexport const d = a;\n');
  write("domain/e.ts", 'export const e = () => import("../top/t.ts");\n');
  write("top/t.ts", 'import { d } from "../domain/d.ts";\nimport "../stray/s.ts";\nexport const t = d;\n');
  write("stray/s.ts", "export {};\n");
  write("lonely/l.ts", "export const l = 1;\n");

  it("reports an upward import (dynamic ones too), the folder loop it makes and unlayered folders (one that imports nothing too)", () => {
    const census = importCensus(root, [["base"], ["domain"], ["top"]]);
    expect(census.upward).toEqual([{ from: "domain/e.ts", to: "top/t.ts" }]);
    expect(census.folderLoops).toEqual([["domain", "top"]]);
    expect(census.unlayered).toEqual(["lonely", "stray"]);
    expect(census.crossFolderImports).toBe(4);
    expect(census.folderPairs).toBe(4);
  });

  it("reports a loop between files, through a type import and a re-export", () => {
    expect(importCensus(root, []).fileLoops).toEqual([["base/a.ts", "base/b.ts", "base/c.ts"]]);
  });

  it("judges each import against the order given", () => {
    const census = importCensus(root, [["base"], ["stray"], ["domain"], ["top"]]);
    expect(census.upward).toEqual([{ from: "domain/e.ts", to: "top/t.ts" }]);
    const flat = importCensus(root, [["base"], ["stray"], ["top"], ["domain"]]);
    expect(flat.upward).toEqual([{ from: "top/t.ts", to: "domain/d.ts" }]);
  });
});

describe("the top of the tree", () => {
  it("imports downward only: lib, then functions, webhooks, http, hosts", () => {
    const top = [["lib"], ["functions"], ["webhooks"], ["http"], ["hosts"]];
    const census = importCensus(join(LIB, ".."), top, top.flat());
    expect(census.unlayered).toEqual([]);
    expect(census.upward.map((e) => `${e.from} -> ${e.to}`)).toEqual([]);
    expect(census.folderLoops).toEqual([]);
  });
});
