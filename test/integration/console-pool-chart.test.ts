import { randomBytes } from "node:crypto";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { goto, launchChromium, signIn } from "./support/console-browser.ts";
import { TEMPLATES, templateObject } from "./support/envs.ts";
import { httpsRequest } from "./support/http.ts";
import { kube, until } from "./support/kube.ts";
import { tenantPool } from "./support/tenant-pool.ts";

// The console's chart of each pool's idle/running/desired over the last hour, in a real browser:
// the test host samples its pool gauges every second (consoleSampleSeconds in global-setup.ts),
// so a claim shows in the chart of its pool, and only to the tenants who may use that pool.

const { custom, cluster } = kube();
const base = `https://127.0.0.1:${cluster.hostPort}`;
const suffix = randomBytes(3).toString("hex");
/** Two teams, each with a template only it may see and a pool of that template. */
const teams = [`chart-a-${suffix}`, `chart-b-${suffix}`];
const templates = teams.map((team) => `${team}-tpl`);
let browser: Browser;

beforeAll(async () => {
  for (const [i, team] of teams.entries())
    await custom.createClusterCustomObject({
      ...TEMPLATES,
      body: templateObject(templates[i] ?? "", "v1", "registry.local/sandbox/base:1", {
        visibility: { rules: [{ team }] },
      }),
    });
  browser = await launchChromium();
}, 60_000);
const a = tenantPool("chart-a", teams[0] ?? "", 1, { templateName: templates[0] });
const b = tenantPool("chart-b", teams[1] ?? "", 1, { templateName: templates[1] });
afterAll(async () => {
  await browser?.close();
  for (const name of templates)
    await custom.deleteClusterCustomObject({ ...TEMPLATES, name }).catch(() => {});
});

/** chart is the chart of `pool` ("namespace/name") on the page. */
const chart = (page: Page, pool: string) => page.locator(`svg.pool-chart[data-pool="${pool}"]`);

/** chartSays reloads the overview until the pool's chart's newest figures are `figures`. */
async function chartSays(
  page: Page,
  pool: string,
  figures: { idle: number; running: number; desired: number },
) {
  const want = Object.entries(figures);
  await until(`${pool}'s chart at ${JSON.stringify(figures)}`, 60_000, async () => {
    await goto(page, `${base}/ui`);
    const svg = chart(page, pool);
    if ((await svg.count()) !== 1) return false;
    for (const [k, v] of want) if ((await svg.getAttribute(`data-${k}`)) !== String(v)) return false;
    return true;
  });
}

describe("the console's pool charts", () => {
  it("show a claim in its pool's chart, to the tenants who may use that pool only", async () => {
    const poolA = `${a.ns}/p`;
    const poolB = `${b.ns}/p`;
    await a.allIdle();
    const page = await signIn(browser, base, a.key);
    await chartSays(page, poolA, { idle: 1, running: 0, desired: 1 });

    const created = await httpsRequest(`${base}/v1/sandboxes`, cluster.caCert, {
      timeoutMs: 60_000,
      method: "POST",
      headers: { "x-api-key": a.key, "content-type": "application/json" },
      body: JSON.stringify({ pool: poolA, wait: true, waitTimeout: 30 }),
    });
    expect(created.status).toBe(201);
    await chartSays(page, poolA, { idle: 0, running: 1, desired: 1 });
    const svg = chart(page, poolA);
    await expect(svg.locator("title").textContent()).resolves.toMatch(
      new RegExp(`^${poolA}, last hour: idle 0, running 1, desired 1 at \\d\\d:\\d\\d UTC$`),
    );
    await expect(svg.getAttribute("role")).resolves.toBe("img");
    expect(Number(await svg.getAttribute("data-points"))).toBeGreaterThanOrEqual(1);
    for (const series of ["idle", "running", "desired"])
      await expect(svg.locator(`polyline.${series}`).count(), series).resolves.toBe(1);
    // Team A sees no chart of team B's pool, nor B of A's; the admin sees both.
    await expect(chart(page, poolB).count()).resolves.toBe(0);
    await expect(page.locator("svg.pool-chart script").count()).resolves.toBe(0);
    await page.context().close();

    await b.allIdle();
    const other = await signIn(browser, base, b.key);
    await chartSays(other, poolB, { idle: 1, running: 0, desired: 1 });
    await expect(chart(other, poolA).count()).resolves.toBe(0);
    await other.context().close();

    const admin = await signIn(browser, base, cluster.functionsToken);
    await chartSays(admin, poolA, { idle: 0, running: 1, desired: 1 });
    await expect(chart(admin, poolB).count()).resolves.toBe(1);
    await admin.context().close();
  }, 240_000);
});
