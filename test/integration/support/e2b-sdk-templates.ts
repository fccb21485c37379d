// The official `e2b` SDK, unmodified, asking our E2B API about templates: Template.exists (GET
// /templates/aliases/{alias}) for each name in E2B_TEST_NAMES (comma-separated), Template.getTags
// for the first, and Template.build, whose first call (POST /v3/templates) we answer 501. It
// prints one JSON line for the test to assert.
import { Template } from "e2b";

const names = (process.env.E2B_TEST_NAMES ?? "").split(",");
const out: Record<string, unknown> = {};
try {
  out.exists = Object.fromEntries(await Promise.all(names.map(async (n) => [n, await Template.exists(n)])));
  out.tags = await Template.getTags(names[0] ?? "");
  try {
    await Template.build(Template().fromImage("registry.local/sandbox/base:1"), "built-by-sdk");
    out.build = "built";
  } catch (e) {
    out.build = `${(e as Error).name}: ${(e as Error).message}`;
  }
} catch (e) {
  out.error = `${(e as Error).name}: ${(e as Error).message}`;
}
console.log(JSON.stringify(out));
