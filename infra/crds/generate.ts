// generate.ts writes crds/*.yaml from the valibot schemas (npm run crds), or with --check
// verifies that the committed files match a fresh generation (npm run crds:check, used by CI).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { renderCrdFiles } from "./render.ts";

const root = resolve(import.meta.dirname, "../..");
const check = process.argv.includes("--check");
const files = renderCrdFiles();

if (check) {
  const stale = files.filter((f) => {
    const target = join(root, f.path);
    return !existsSync(target) || readFileSync(target, "utf8") !== f.content;
  });
  if (stale.length > 0) {
    console.error(`stale CRDs (run npm run crds): ${stale.map((f) => f.path).join(", ")}`);
    process.exit(1);
  }
  console.log(`crds: OK (${files.length} files up to date)`);
} else {
  for (const f of files) {
    const target = join(root, f.path);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, f.content);
    console.log(`wrote ${f.path}`);
  }
}
