import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { goto, launchChromium, signIn as signInAt } from "./support/console-browser.ts";
import { TEMPLATES, templateObject } from "./support/envs.ts";
import { httpsRequest } from "./support/http.ts";
import { kube, until } from "./support/kube.ts";
import { tenantPool } from "./support/tenant-pool.ts";

// The web console in a real browser (Debian's Chromium, driven by playwright-core; ADR 0021),
// against the test host: sign in with an API key, find the pool, see a sandbox claimed through
// the API, release it from the console, find its record in history; see a sandbox paused through
// the API listed as paused, resume it and kill it from the console (issue #39). The screenshot is
// kept in test-results/ (README's picture: docs/console.png).

const { custom, cluster } = kube();
const t = tenantPool("console", "console");
const base = `https://127.0.0.1:${cluster.hostPort}`;
const template = `console-${randomBytes(3).toString("hex")}`;
let browser: Browser;

beforeAll(async () => {
  const docs = "# Python sandbox\n\nUse `python3`. <script>alert('x')</script>\n\n[bad](javascript:alert(1))";
  const tpl = templateObject(template, "v1", "registry.local/sandbox/python:3.12");
  await custom.createClusterCustomObject({
    ...TEMPLATES,
    body: { ...tpl, metadata: { ...tpl.metadata, annotations: { "agentbox.navix.sh/docs": docs } } },
  });
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await custom.deleteClusterCustomObject({ ...TEMPLATES, name: template }).catch(() => {});
});

/** signIn opens a browser page signed in with `credential` (the console's own form). */
const signIn = (credential: string): Promise<Page> => signInAt(browser, base, credential);

describe("the web console", () => {
  it("signs in with a key, shows its sandbox, releases it, and finds its record in history", async () => {
    const key = await t.keyOf(`alice-${randomBytes(2).toString("hex")}`);
    const page = await signIn(key);
    await expect(page.locator(`tr[data-pool="${t.ns}/p"]`).count()).resolves.toBe(1);

    const created = await httpsRequest(`${base}/v1/sandboxes`, cluster.caCert, {
      timeoutMs: 60_000,
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify({ pool: `${t.ns}/p`, wait: true, waitTimeout: 30 }),
    });
    expect(created.status).toBe(201);
    const { sandboxId } = JSON.parse(created.body) as { sandboxId: string };
    await page.reload();
    const row = page.locator(`tr[data-sandbox="${sandboxId}"]`);
    await expect(row.locator(".phase").textContent()).resolves.toBe("running");
    mkdirSync("test-results", { recursive: true });
    await page.screenshot({ path: "test-results/console.png", fullPage: true });

    // Another tenant's console does not show it.
    const other = await signIn(await t.keyOf(`bob-${randomBytes(2).toString("hex")}`));
    await expect(other.locator(`tr[data-sandbox="${sandboxId}"]`).count()).resolves.toBe(0);
    await other.context().close();

    await row.locator("button", { hasText: "Release" }).click();
    await page.waitForURL(`${base}/ui#sandboxes`);
    await until("the sandbox's record in the console's history", 60_000, async () => {
      await goto(page, `${base}/ui/history?namespace=${t.ns}`);
      return (await page.locator(`tr[data-record="${sandboxId}"]`).count()) === 1;
    });
    await expect(page.locator(`tr[data-record="${sandboxId}"] td`).nth(2).textContent()).resolves.toBe(
      "Released",
    );
  }, 180_000);

  it("lists a paused sandbox with its pause, retention and size, resumes it, and kills it paused", async () => {
    const key = await t.keyOf(`carol-${randomBytes(2).toString("hex")}`);
    const v1 = (method: string, path: string, body?: unknown) =>
      httpsRequest(`${base}/v1${path}`, cluster.caCert, {
        timeoutMs: 90_000,
        method,
        headers: { "x-api-key": key, "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    await t.allIdle();
    const created = await v1("POST", "/sandboxes", { pool: `${t.ns}/p`, wait: true, waitTimeout: 30 });
    expect(created.status, created.body).toBe(201);
    const { sandboxId } = JSON.parse(created.body) as { sandboxId: string };
    const paused = await v1("POST", `/sandboxes/${sandboxId}/pause`);
    expect(paused.status, paused.body).toBe(200);

    const page = await signIn(key);
    const row = page.locator(`tr[data-sandbox="${sandboxId}"]`);
    await expect(row.locator(".phase").textContent()).resolves.toBe("paused");
    await expect(row.locator(".kept").textContent()).resolves.toMatch(/^kept until \d{4}-\d\d-\d\dT/);
    await expect(row.locator(".size").textContent()).resolves.toMatch(
      /^snapshot \d+(\.\d)? (B|KiB|MiB|GiB)$/,
    );
    await expect(row.locator("button").allTextContents()).resolves.toEqual(["Resume", "Kill"]);
    // Another tenant's console does not show it.
    const other = await signIn(await t.keyOf(`dave-${randomBytes(2).toString("hex")}`));
    await expect(other.locator(`tr[data-sandbox="${sandboxId}"]`).count()).resolves.toBe(0);
    await other.context().close();

    // Its page says it is paused, and shows its pause from the history.
    await goto(page, `${base}/ui/sandboxes/${sandboxId}`);
    await expect(page.locator(".paused-note").count()).resolves.toBe(1);
    await expect(page.locator('tr[data-event="paused-1"]').count()).resolves.toBe(1);

    // Resume from the list: the pool's one pod went back idle, and runs the sandbox again.
    await t.allIdle();
    await goto(page, `${base}/ui`);
    await row.locator("button", { hasText: "Resume" }).click();
    await page.waitForURL(`${base}/ui#sandboxes`, { timeout: 90_000 });
    await until("the console showing the resumed sandbox running", 60_000, async () => {
      await goto(page, `${base}/ui`);
      return (await row.locator(".phase").textContent()) === "running";
    });
    await expect(row.locator("button").allTextContents()).resolves.toEqual(["Release"]);
    const view = JSON.parse((await v1("GET", `/sandboxes/${sandboxId}`)).body) as { phase: string };
    expect(view.phase).toBe("running");

    // Paused again, Kill ends it: no sandbox, no snapshot (GET is a 404), a record in history.
    const again = await v1("POST", `/sandboxes/${sandboxId}/pause`);
    expect(again.status, again.body).toBe(200);
    await goto(page, `${base}/ui`);
    await row.locator("button", { hasText: "Kill" }).click();
    await page.waitForURL(`${base}/ui#sandboxes`);
    await expect(row.count()).resolves.toBe(0);
    expect((await v1("GET", `/sandboxes/${sandboxId}`)).status).toBe(404);
    await goto(page, `${base}/ui/sandboxes/${sandboxId}`);
    await expect(page.locator('tr[data-event="resumed-1"]').count()).resolves.toBe(1);
    await expect(page.locator('tr[data-event="paused-2"]').count()).resolves.toBe(1);
    await expect(page.locator(".paused-note").count()).resolves.toBe(0);
    await page.context().close();
  }, 240_000);

  it("renders a template's docs as Markdown without running what they embed", async () => {
    const page = await signIn(cluster.functionsToken); // the admin token: every template
    await goto(page, `${base}/ui/templates`);
    const docs = page.locator(`article[data-template="${template}"] .docs`);
    await expect(docs.locator("h1").textContent()).resolves.toBe("Python sandbox");
    await expect(docs.locator("code").textContent()).resolves.toBe("python3");
    await expect(docs.locator("script").count()).resolves.toBe(0);
    await expect(docs.locator("a[href^='javascript:']").count()).resolves.toBe(0);
    await page.context().close();
  });

  it("refuses a wrong credential and cross-origin forms", async () => {
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    const page = await context.newPage();
    await goto(page, `${base}/ui/login`);
    await page.fill("input[name=credential]", "abx_not-a-key");
    await page.click("button[type=submit]");
    await expect(page.locator(".warn").textContent()).resolves.toContain("neither a valid API key");
    await context.close();
    const forged = await httpsRequest(`${base}/ui/logout`, cluster.caCert, {
      timeoutMs: 10_000,
      method: "POST",
      headers: { origin: "https://evil.example" },
    });
    expect(forged.status).toBe(403);
  });
});
