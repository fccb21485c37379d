import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey } from "../../functions/api/create-api-key.ts";
import { CHROMIUM_ARGS, chromiumPath } from "../../infra/ci/chromium.ts";
import type { SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import { goto } from "./support/console-browser.ts";
import { createTemplateAndEnv, ENVS, TEMPLATES } from "./support/envs.ts";
import { kube, newNamespace, until } from "./support/kube.ts";
import { testDeps } from "./support/steps.ts";
import { API_KEYS } from "./support/tenant-pool.ts";

// The console's Env page in a real browser (Debian's Chromium, ADR 0021), against the test host:
// an admin adds a member and changes a bound (the apiserver has them, the page shows them, the
// host's Env run makes the pool), an admission denial is shown with its field, the timeline shows
// the edits and the Env run's decisions; a team key sees the page without the forms.

const { core, custom, cluster } = kube();
const base = `https://127.0.0.1:${cluster.hostPort}`;
const template = `cenv-${randomBytes(3).toString("hex")}`;
const deps = testDeps();
let ns = "";
let cleanup = async () => {};
let browser: Browser;

beforeAll(async () => {
  // An audit-* namespace: the test host runs the Env on its audit events, as a real host does.
  ({ ns, cleanup } = await newNamespace(core, "audit-cenv"));
  // The host keeps console sessions next to the API keys: their namespace must exist to sign in.
  await core.createNamespace({ body: { metadata: { name: API_KEYS.namespace } } }).catch(() => {});
  await createTemplateAndEnv(
    ns,
    template,
    "py",
    [{ name: "a", spec: { replicas: 1 }, config: { scalingGroup: "g", maxReplicas: 4 } }],
    { autoscaling: { groups: [{ name: "g", enabled: false, maxReplicas: 8 }] } },
  );
  const executablePath = chromiumPath();
  if (!executablePath) throw new Error("no Chromium: the test preflight installs Debian's (see ADR 0021)");
  browser = await chromium.launch({ executablePath, args: CHROMIUM_ARGS });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await custom.deleteClusterCustomObject({ ...TEMPLATES, name: template }).catch(() => {});
  await cleanup();
  deps.history.close();
});

/** signIn opens a browser page signed in with `credential` (the console's own form). */
async function signIn(credential: string): Promise<Page> {
  const context = await browser.newContext({
    ignoreHTTPSErrors: true,
    viewport: { width: 1400, height: 900 },
  });
  const page = await context.newPage();
  await goto(page, `${base}/ui/login`);
  await page.fill("input[name=credential]", credential);
  await page.click("button[type=submit]");
  await page.waitForURL(`${base}/ui`);
  return page;
}

const members = async () =>
  ((await custom.getNamespacedCustomObject({ ...ENVS, namespace: ns, name: "py" })) as SandboxEnv).spec
    .clusters?.[0]?.members ?? [];
const cell = (page: Page, member: string, field: string) =>
  page.locator(`tr[data-member="${member}"] td[data-field="${field}"]`).textContent();

describe("the console's Env page", () => {
  it("adds a member, changes a bound, shows an admission denial and the timeline", async () => {
    const page = await signIn(cluster.functionsToken); // the test host's admin token
    await page.locator(`a[href="/ui/envs/${ns}/py"]`).click();
    await page.waitForURL(`${base}/ui/envs/${ns}/py`);
    await expect(page.locator('tr[data-member="a"]').count()).resolves.toBe(1);

    // Add member b: the apiserver has it, the page says so, and the host's Env run makes its pool.
    const add = page.locator("form#add-member");
    await add.locator("input[name=member]").fill("b");
    await add.locator("input[name=replicas]").fill("1");
    await add.locator("input[name=scalingGroup]").fill("g");
    await add.locator("input[name=maxReplicas]").fill("3");
    await add.locator("button").click();
    await page.locator("#edit-done", { hasText: 'added member "b"' }).waitFor();
    expect((await members()).map((m) => [m.name, m.config?.maxReplicas])).toEqual([
      ["a", 4],
      ["b", 3],
    ]);
    await until("member b's pool on the page", 60_000, async () => {
      await goto(page, `${base}/ui/envs/${ns}/py`);
      return (await page.locator('tr[data-member="b"] td').nth(2).textContent()) === `${ns}/b`;
    });

    // Change a bound of a.
    const set = page.locator("form#set-member");
    await set.locator("select[name=member]").selectOption("a");
    await set.locator("input[name=maxReplicas]").fill("6");
    await set.locator("button").click();
    await page.locator("#edit-done", { hasText: "config.maxReplicas 4→6" }).waitFor();
    expect((await members()).find((m) => m.name === "a")?.config?.maxReplicas).toBe(6);
    await expect(cell(page, "a", "bounds")).resolves.toBe("–..6");

    // Refresh a: its pool already renders the template's current revision, and the page says so.
    await page.locator('tr[data-member="a"] form[action$="/refresh-member"] button').click();
    await page
      .locator("#edit-done", { hasText: `member "a": already at SandboxTemplate "${template}"` })
      .waitFor();
    // The message rides in a one-time cookie, not the URL: a crafted link shows no "Done" line.
    expect(page.url()).not.toContain("done");
    await goto(
      page,
      `${base}/ui/envs/${ns}/py?done=${encodeURIComponent("your key expired: see evil.example")}`,
    );
    await expect(page.locator("#edit-done").count()).resolves.toBe(0);

    // A floor above the ceiling: admission refuses it, and the page says which field of which member.
    await page.locator("form#set-member select[name=member]").selectOption("a");
    await page.locator("form#set-member input[name=minReplicas]").fill("9");
    const [denied] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === "POST"),
      page.locator("form#set-member button").click(),
    ]);
    expect(denied.status()).toBe(422);
    const error = page.locator("#edit-error");
    await expect(error.locator("h2").textContent()).resolves.toBe("Not changed (422 Invalid)");
    await expect(error.locator("li").first().textContent()).resolves.toMatch(
      /spec\.clusters\[0\]\.members\[0\]\.config\.minReplicas \(member "a"\): must not exceed config\.maxReplicas/,
    );
    expect((await members()).find((m) => m.name === "a")?.config?.minReplicas).toBeUndefined();

    // The timeline: both edits (newest first) and the Env run's MemberCreated for b.
    await goto(page, `${base}/ui/envs/${ns}/py`);
    const reasons = await page
      .locator("#timeline tr.event")
      .evaluateAll((rows) => rows.map((r) => r.getAttribute("data-reason")));
    expect(reasons.filter((r) => r === "EnvEdited")).toHaveLength(2);
    expect(reasons).toContain("MemberCreated");
    await expect(
      page.locator('#timeline tr.event[data-reason="EnvEdited"]').first().textContent(),
    ).resolves.toContain("config.maxReplicas 4→6");
    mkdirSync("test-results", { recursive: true });
    await page.screenshot({ path: "test-results/console-envs.png", fullPage: true });
    await page.context().close();
  }, 180_000);

  it("shows a team key the Env without its forms, and refuses its edits", async () => {
    await core.createNamespace({ body: { metadata: { name: API_KEYS.namespace } } }).catch(() => {});
    const key = await createApiKey(
      { kube: deps.kube, apiKeys: API_KEYS, now: () => new Date() },
      { team: "cenv", user: `u-${randomBytes(2).toString("hex")}` },
    );
    const page = await signIn(key);
    await goto(page, `${base}/ui/envs/${ns}/py`);
    await expect(page.locator('tr[data-member="a"]').count()).resolves.toBe(1);
    await expect(page.locator("form#add-member").count()).resolves.toBe(0);
    await expect(page.locator("#members").textContent()).resolves.toContain(
      "Only an admin may change an Env",
    );
    const res = await page.request.post(`${base}/ui/envs/${ns}/py/remove-member`, {
      form: { member: "a" },
      headers: { origin: base },
    });
    expect(res.status()).toBe(403);
    expect(await res.text()).toContain("only an admin may change an Env");
    expect((await members()).map((m) => m.name)).toEqual(["a", "b"]);
    await page.context().close();
  }, 60_000);
});
