import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey } from "../../functions/api/create-api-key.ts";
import { openSqlite, type SqliteStores } from "../../hosts/node/sqlite-usage.ts";
import { clusterDir } from "../../infra/cluster/state.ts";
import { NO_USAGE_SAMPLES } from "../../lib/console/sandbox-page.ts";
import type { SandboxRecord } from "../../lib/history/record.ts";
import { newSandboxId } from "../../lib/lifecycle/sandbox-ids.ts";
import type { UsageSample } from "../../lib/usage/sample.ts";
import { goto, launchChromium, signIn } from "./support/console-browser.ts";
import { httpsRequest } from "./support/http.ts";
import { kube } from "./support/kube.ts";
import { API_KEYS, tenantPool } from "./support/tenant-pool.ts";

// The console's sandbox page, in a real browser: a sandbox's CPU and memory over its life, from
// the samples in the test host's own usage store (its history's SQLite file), to its owner and
// the admin only. Samples are put into that store here, with figures the host's own sampler
// (which samples the running sandbox every second from kwok's figures) never makes.

const { cluster } = kube();
const base = `https://127.0.0.1:${cluster.hostPort}`;
const suffix = randomBytes(3).toString("hex");
const team = `usage-a-${suffix}`;
const user = `u-${suffix}`;
const MiB = 1024 * 1024;
const a = tenantPool("usage-chart", team, 1);
let browser: Browser;
let stores: SqliteStores;
let ownerKey: string;
let otherKey: string;

beforeAll(async () => {
  browser = await launchChromium();
  // The test host's history and usage live in this file (global-setup.ts: historyPath).
  stores = openSqlite(join(clusterDir(cluster.name), "test-history.sqlite"));
  ownerKey = await a.keyOf(user);
  otherKey = await createApiKey(
    { kube: a.deps.kube, apiKeys: API_KEYS, now: () => new Date() },
    { team: `usage-b-${suffix}`, user },
  );
}, 60_000);
afterAll(async () => {
  await browser?.close();
  stores?.close();
});

/** samplesOf makes `n` samples of `id` a second apart, ending `endAgoS` seconds ago. */
function samplesOf(
  id: string,
  n: number,
  endAgoS: number,
  peak: { cpu: number; mem: number },
): UsageSample[] {
  const end = Math.floor(Date.now() / 1000) - endAgoS;
  return Array.from({ length: n }, (_, i) => ({
    sandboxId: id,
    at: new Date((end - (n - 1 - i)) * 1000).toISOString(),
    cpuCount: 2,
    cpuUsedPct: i === 1 ? peak.cpu : 5 + i,
    memUsed: (i === 2 ? peak.mem : 100 + i) * MiB,
    memTotal: 1024 * MiB,
    memCache: 0,
    diskUsed: 0,
    diskTotal: 0,
  }));
}

const chart = (page: Page, metric: string) => page.locator(`svg.usage-chart[data-metric="${metric}"]`);

/** open goes to the sandbox's page and answers its HTTP status. */
async function open(page: Page, id: string): Promise<number | undefined> {
  return (await goto(page, `${base}/ui/sandboxes/${id}`))?.status();
}

describe("the console's sandbox page", () => {
  it("charts a running sandbox's CPU and memory over its life, to its owner and the admin only", async () => {
    await a.allIdle();
    const created = await httpsRequest(`${base}/v1/sandboxes`, cluster.caCert, {
      timeoutMs: 60_000,
      method: "POST",
      headers: { "x-api-key": ownerKey, "content-type": "application/json" },
      body: JSON.stringify({ pool: `${a.ns}/p`, wait: true, waitTimeout: 30 }),
    });
    expect(created.status).toBe(201);
    const id = (JSON.parse(created.body) as { sandboxId: string }).sandboxId;
    const mine = samplesOf(id, 10, 60, { cpu: 87.5, mem: 700 });
    await stores.usage.put(mine);

    const page = await signIn(browser, base, ownerKey);
    // The page links from the overview's sandbox list.
    await page.click(`tr[data-sandbox="${id}"] a[href="/ui/sandboxes/${id}"]`);
    await page.waitForURL(`${base}/ui/sandboxes/${id}`);
    await expect(page.locator(`#sandbox[data-sandbox="${id}"]`).count()).resolves.toBe(1);
    for (const metric of ["cpu", "memory"]) {
      const svg = chart(page, metric);
      await expect(svg.count(), metric).resolves.toBe(1);
      await expect(svg.getAttribute("data-sandbox")).resolves.toBe(id);
      await expect(svg.getAttribute("role")).resolves.toBe("img");
      const points = Number(await svg.getAttribute("data-points"));
      expect(points).toBeGreaterThanOrEqual(mine.length);
      const line = await svg.locator(`polyline.${metric}`).getAttribute("points");
      expect(line?.split(" ")).toHaveLength(points);
    }
    // The peaks are the samples put here: nothing the sampler reads from kwok comes near them.
    await expect(chart(page, "cpu").getAttribute("data-peak")).resolves.toBe("87.5");
    await expect(chart(page, "memory").getAttribute("data-peak")).resolves.toBe(String(700 * MiB));
    await expect(chart(page, "cpu").locator("title").textContent()).resolves.toMatch(
      new RegExp(`^CPU of ${id}: .* at \\d\\d:\\d\\d:\\d\\d UTC; peak 87\\.5 %$`),
    );
    await expect(page.locator("svg.usage-chart script").count()).resolves.toBe(0);
    await page.context().close();

    // Another team's key: the same page as for a sandbox that does not exist.
    const other = await signIn(browser, base, otherKey);
    expect(await open(other, id)).toBe(404);
    await expect(other.locator("svg.usage-chart").count()).resolves.toBe(0);
    await expect(other.locator("#sandbox").textContent()).resolves.toContain(`There is no sandbox ${id}`);
    expect(await open(other, newSandboxId())).toBe(404);
    await other.context().close();

    const admin = await signIn(browser, base, cluster.functionsToken);
    expect(await open(admin, id)).toBe(200);
    await expect(chart(admin, "memory").getAttribute("data-peak")).resolves.toBe(String(700 * MiB));
    await admin.context().close();
  }, 180_000);

  it("charts an ended sandbox from its history record, exactly its samples; says when it has none", async () => {
    const record = (id: string): SandboxRecord => ({
      sandboxId: id,
      namespace: a.ns,
      poolName: "p",
      podName: "p-gone",
      team,
      user,
      claimedAt: new Date(Date.now() - 600_000).toISOString(),
      terminatedAt: new Date(Date.now() - 60_000).toISOString(),
      containerImages: {},
      metadata: {},
      cpuMillis: 500,
      memoryBytes: 1024 * MiB,
      stopReason: "Released",
    });
    const ended = newSandboxId();
    const bare = newSandboxId();
    await stores.history.put(record(ended));
    await stores.history.put(record(bare));
    const samples = samplesOf(ended, 5, 120, { cpu: 40, mem: 512 });
    await stores.usage.put(samples);
    const last = samples.at(-1)!;

    const page = await signIn(browser, base, ownerKey);
    expect(await open(page, ended)).toBe(200);
    await expect(page.locator("#sandbox").textContent()).resolves.toContain("(Released)");
    await expect(chart(page, "cpu").getAttribute("data-points")).resolves.toBe("5");
    await expect(chart(page, "cpu").getAttribute("data-cpu")).resolves.toBe(String(last.cpuUsedPct));
    await expect(chart(page, "cpu").getAttribute("data-cpus")).resolves.toBe("2");
    await expect(chart(page, "memory").getAttribute("data-memory")).resolves.toBe(String(last.memUsed));
    await expect(chart(page, "memory").getAttribute("data-memory-total")).resolves.toBe(String(1024 * MiB));
    await expect(chart(page, "memory").getAttribute("data-peak")).resolves.toBe(String(512 * MiB));

    expect(await open(page, bare)).toBe(200);
    await expect(page.locator("svg.usage-chart").count()).resolves.toBe(0);
    await expect(page.locator("#usage").textContent()).resolves.toContain(NO_USAGE_SAMPLES);
    await page.context().close();

    const other = await signIn(browser, base, otherKey);
    expect(await open(other, ended)).toBe(404);
    await other.context().close();
  }, 120_000);
});
