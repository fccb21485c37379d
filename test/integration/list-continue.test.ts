import { Hono } from "hono";
import { beforeAll, describe, expect, it } from "vitest";
import { claimSandbox } from "../../functions/claim-sandbox.ts";
import { DEFAULT_E2B_SETTINGS } from "../../hosts/app.ts";
import { e2bRoutes } from "../../http/e2b.ts";
import { inProcessApi, tenantKey } from "./support/in-process-api.ts";
import { poolTest, withPostStart } from "./support/steps.ts";

// A list token the apiserver refuses is the caller's mistake: both surfaces answer their own 400
// naming the parameter (continue, nextToken), where they answered 500 before.

const t = poolTest("list-token");
const { app, deps } = inProcessApi(t.deps);
const e2b = new Hono();
let key = "";

beforeAll(async () => {
  await withPostStart(deps);
  e2b.route("/e2b", e2bRoutes(deps, DEFAULT_E2B_SETTINGS));
  key = await tenantKey(deps, "list-token-team");
  await t.readyPool("tokens", 2);
  for (const [i, pod] of (await t.pods("tokens")).entries())
    expect(
      (
        await claimSandbox(deps, pod, {
          sandboxId: `tok-${i}`,
          containerImages: { sandbox: "registry.local/sandbox/agent:1" },
          team: "list-token-team",
          user: "u",
        })
      ).ok,
    ).toBe(true);
});

const get = (on: Hono, path: string) => on.request(path, { headers: { "x-api-key": key } });

describe("a refused list token", () => {
  it("GET /v1/sandboxes?continue=garbage: 400 BadRequest naming continue; a real token still pages", async () => {
    const first = await get(app, "/v1/sandboxes?limit=1");
    expect(first.status).toBe(200);
    const page = (await first.json()) as { sandboxes: unknown[]; continue?: string };
    expect(page.sandboxes).toHaveLength(1);
    expect(page.continue).toBeTruthy();
    const second = await get(
      app,
      `/v1/sandboxes?limit=1&continue=${encodeURIComponent(page.continue ?? "")}`,
    );
    expect(second.status).toBe(200);
    expect(((await second.json()) as { sandboxes: unknown[] }).sandboxes).toHaveLength(1);

    const bad = await get(app, "/v1/sandboxes?continue=garbage");
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({
      error: {
        code: "BadRequest",
        message: "invalid query",
        fields: [{ path: "continue", message: expect.stringContaining("not a token of this list") }],
      },
    });
  });

  it("GET /e2b/v2/sandboxes?nextToken=garbage: E2B's 400 naming nextToken", async () => {
    expect((await get(e2b, "/e2b/v2/sandboxes?limit=1")).status).toBe(200);
    const bad = await get(e2b, "/e2b/v2/sandboxes?nextToken=garbage");
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({
      code: 400,
      message: expect.stringMatching(/^nextToken: not a token of this list/),
    });
  });
});
