import { describe, expect, it } from "vitest";
import type { HostDeps } from "../../functions/host-deps.ts";
import { reconcileEnv } from "../../functions/runs/reconcile-env.ts";
import { Misconfigured, NotFound, StepRefused } from "../../functions/steps/step.ts";
import { functionsRoutes } from "../../http/functions.ts";
import { KubeClient } from "../../lib/kube/client.ts";

// The manual triggers' HTTP answers, on plain runners: what a refused step, a missing setting and a
// bad query look like to an operator.

const TOKEN = "t".repeat(24);
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

function app(
  run: () => Promise<unknown>,
  runEnv: () => Promise<unknown>,
  refreshMember: () => Promise<unknown> = async () => ({}),
) {
  return functionsRoutes({
    adminToken: TOKEN,
    steps: ["reconcile", "refresh-template"],
    run,
    runEnv,
    refreshMember,
    log: quiet,
  });
}
const post = (a: ReturnType<typeof app>, path: string) =>
  a.request(path, { method: "POST", headers: { authorization: `Bearer ${TOKEN}` } });

describe("the manual triggers", () => {
  it("answer a refused step with 409 and its reason, a missing setting with 500 naming it", async () => {
    const a = app(
      async () => Promise.reject(new StepRefused("pool has no spec.templateName to refresh from")),
      async () => Promise.reject(new Misconfigured("no local cluster ID is configured")),
    );
    const refused = await post(a, "/refresh-template?namespace=ns&pool=p");
    expect(refused.status).toBe(409);
    expect(await refused.json()).toEqual({
      error: { code: "Refused", message: "pool has no spec.templateName to refresh from" },
    });
    const misconfigured = await post(a, "/reconcile-env?namespace=ns&env=e");
    expect(misconfigured.status).toBe(500);
    expect(await misconfigured.json()).toEqual({
      error: { code: "Misconfigured", message: "no local cluster ID is configured" },
    });
  });

  it("recognise the error kinds by name, as they arrive from the reconciler thread", async () => {
    const crossed = Object.assign(new Error('pool is a member of SandboxEnv "e"'), { name: "StepRefused" });
    const a = app(
      async () => Promise.reject(crossed),
      async () => ({}),
    );
    expect((await post(a, "/reconcile?namespace=ns&pool=p")).status).toBe(409);
  });

  it("name the bad query fields of an Env run, and run a good one", async () => {
    const a = app(
      async () => ({}),
      async () => ({ found: true, outcomes: [] }),
    );
    const bad = await post(a, "/reconcile-env?namespace=ns");
    expect(bad.status).toBe(400);
    expect(
      ((await bad.json()) as { error: { fields: { path: string }[] } }).error.fields.map((f) => f.path),
    ).toEqual(["env"]);
    const good = await post(a, "/reconcile-env?namespace=ns&env=e");
    expect(await good.json()).toEqual({
      step: "reconcile-env",
      namespace: "ns",
      env: "e",
      report: { found: true, outcomes: [] },
    });
  });
});

describe("the refresh-member trigger", () => {
  it("names a missing parameter, answers an unknown Env or member with 404 and a refusal with 409", async () => {
    const answers: unknown[] = [
      new NotFound('SandboxEnv "ns/e" has no member "m" in cluster segment "local"'),
      new StepRefused('member "m" is snapshot-based: ...'),
    ];
    const a = app(
      async () => ({}),
      async () => ({}),
      async () => Promise.reject(answers.shift()),
    );
    const bad = await post(a, "/refresh-member?namespace=ns&env=e");
    expect(bad.status).toBe(400);
    expect(
      ((await bad.json()) as { error: { fields: { path: string }[] } }).error.fields.map((f) => f.path),
    ).toEqual(["member"]);
    const unknown = await post(a, "/refresh-member?namespace=ns&env=e&member=m");
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({
      error: { code: "NotFound", message: 'SandboxEnv "ns/e" has no member "m" in cluster segment "local"' },
    });
    const refused = await post(a, "/refresh-member?namespace=ns&env=e&member=m");
    expect(refused.status).toBe(409);
    const listed = await a.request("/", { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(await listed.json()).toMatchObject({ env: ["reconcile-env", "refresh-member"] });
  });

  it("needs the admin token", async () => {
    const a = app(
      async () => ({}),
      async () => ({}),
    );
    const res = await a.request("/refresh-member?namespace=ns&env=e&member=m", { method: "POST" });
    expect(res.status).toBe(401);
  });
});

describe("the Env step without a cluster ID", () => {
  it("refuses before any request, naming the setting", async () => {
    let requests = 0;
    const deps = {
      kube: new KubeClient(async () => {
        requests++;
        return { status: 200, body: "{}" };
      }),
      log: quiet,
      now: () => new Date(),
    } as unknown as HostDeps;
    await expect(reconcileEnv(deps, "ns", "e")).rejects.toThrow(
      /AGENTBOX_CLUSTER_ID on the Node host, CLUSTER_ID on the Worker/,
    );
    expect(requests).toBe(0);
  });
});
