import { Worker } from "node:worker_threads";
import { describe, expect, it } from "vitest";

/**
 * loadedBy is every module URL the thread entry `entry` loads, read from Node's resolve hook in a
 * worker of its own (the entry may throw once loaded: it is started without its settings here).
 */
function loadedBy(entry: URL): Promise<string[]> {
  const code = `
    const { registerHooks } = require("node:module");
    const { parentPort } = require("node:worker_threads");
    const seen = new Set();
    registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); seen.add(r.url); return r; } });
    import(${JSON.stringify(entry.href)}).catch(() => {}).finally(() => parentPort.postMessage([...seen]));
  `;
  return new Promise((resolve, reject) => {
    const worker = new Worker(code, { eval: true, workerData: undefined });
    worker.once("message", (urls: string[]) => {
      void worker.terminate();
      resolve(urls);
    });
    worker.once("error", reject);
  });
}

describe("the sandbox router's thread", () => {
  // Every full collection of the router's heap (a download causes one every few tens of MB) marks
  // whatever its modules hold: schemas and API clients it does not use cost throughput (ADR 0027).
  it("loads no schema library, no Kubernetes client and none of the API's schemas", async () => {
    const urls = await loadedBy(new URL("../../hosts/node/data-plane/router-child-main.ts", import.meta.url));
    expect(urls.some((u) => u.endsWith("/hosts/node/data-plane/forward-request.ts"))).toBe(true);
    const heavy = urls.filter(
      (u) =>
        /\/node_modules\/(valibot|@kubernetes\/client-node|hono|pino)\//.test(u) ||
        (/\/lib\/api\//.test(u) && !u.endsWith("/lib/crd/keys.ts")),
    );
    expect(heavy).toEqual([]);
  }, 30_000);
});
