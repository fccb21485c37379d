import { randomBytes } from "node:crypto";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { DEFAULT_E2B_SETTINGS } from "../../hosts/app.ts";
import { e2bRoutes } from "../../http/e2b.ts";
import { SANDBOX_ID_LABEL, WAITER_UNTIL_ANNOTATION } from "../../lib/crd/keys.ts";
import { TEMPLATES, templateObject } from "./support/envs.ts";
import { inProcessApi, postCreate, tenantKey } from "./support/in-process-api.ts";
import { kube, until } from "./support/kube.ts";
import { phaseOf, poolTest, reconcileUntil, withPostStart } from "./support/steps.ts";

// Creates that wait for their sandbox when their host's shutdown grace ends (HostDeps.stopping,
// ADR 0029), against the real apiserver: a native create hands the start back (its pod's
// waiter-until removed, so a reconcile run completes it) and answers 503 ShuttingDown with the
// sandbox; an E2B create, whose caller never learns the ID, releases it and answers 503 with
// Retry-After. Each start takes 5 s (kwok's per-pod pull delay), so the wait is under way.

const t = poolTest("shutdown");
const slow = (templateName?: string) => ({
  ...(templateName ? { templateName } : {}),
  template: {
    metadata: { annotations: { "kwok.agentbox.dev/pull-delay": "5s" } },
    spec: { containers: [{ name: "sandbox", image: "registry.local/sandbox/base:1" }] },
  },
});
/** claimed waits for the pool's one pod to be claimed with a waiter-until, and returns it. */
const claimed = (pool: string) =>
  until("the claim, with its waiter-until", 20_000, async () => {
    const [pod] = await t.pods(pool);
    const waited = pod?.metadata?.annotations?.[WAITER_UNTIL_ANNOTATION] !== undefined;
    return pod && phaseOf(pod) === "starting" && waited ? pod : undefined;
  });

describe("a waiting create when its host stops", () => {
  it("native: hands the start back and answers 503 ShuttingDown with the sandbox, which a reconcile then runs", async () => {
    const stopping = new AbortController();
    const { deps, app } = inProcessApi(t.deps, { stopping: stopping.signal });
    const key = await tenantKey(deps, "shutdown-test");
    await t.readyPool("native", 1, slow());
    const answer = postCreate(app, key, { pool: `${t.ns}/native`, wait: true, startupTimeout: 90 });
    const pod = await claimed("native");
    stopping.abort();
    const res = await answer;
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBeNull();
    const { error } = (await res.json()) as {
      error: { code: string; sandbox: { sandboxId: string; phase: string } };
    };
    const id = pod.metadata?.labels?.[SANDBOX_ID_LABEL];
    expect([error.code, error.sandbox.sandboxId, error.sandbox.phase]).toEqual([
      "ShuttingDown",
      id,
      "starting",
    ]);
    const [now] = await t.pods("native");
    expect(now?.metadata?.annotations?.[WAITER_UNTIL_ANNOTATION]).toBeUndefined();
    // The pool's run (leaving waited starts to their creates, ADR 0022) completes it once it can.
    await reconcileUntil(t.deps, t.ns, "native", "the sandbox running", async () => {
      const [p] = await t.pods("native");
      return p && phaseOf(p) === "running" && p.metadata?.labels?.[SANDBOX_ID_LABEL] === id;
    });
  });

  it("E2B: releases the sandbox its caller never learnt of and answers 503 with Retry-After", async () => {
    const { custom } = kube();
    const template = `shutdown-${randomBytes(3).toString("hex")}`;
    await custom.createClusterCustomObject({
      ...TEMPLATES,
      body: templateObject(template, "1", "registry.local/e2b-base:1"),
    });
    try {
      const stopping = new AbortController();
      const { deps } = inProcessApi(await withPostStart(t.deps), { stopping: stopping.signal });
      const key = await tenantKey(deps, "research");
      const e2b = new Hono().route("/e2b", e2bRoutes(deps, DEFAULT_E2B_SETTINGS));
      await t.readyPool("e2b", 1, slow(template));
      const answer = e2b.request("/e2b/sandboxes", {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "application/json" },
        body: JSON.stringify({ templateID: template, timeout: 60 }),
      });
      const pod = await claimed("e2b");
      stopping.abort();
      const res = await answer;
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBe("1");
      const id = pod.metadata?.labels?.[SANDBOX_ID_LABEL] ?? "";
      // Released (stopping, then idle again) and recorded as a start called off.
      const [now] = await t.pods("e2b");
      expect(now && phaseOf(now)).toBe("stopping");
      await reconcileUntil(t.deps, t.ns, "e2b", "the pod idle again", async () => {
        const [p] = await t.pods("e2b");
        return p && phaseOf(p) === "idle";
      });
      expect((await t.deps.history.get(id))?.stopReason).toBe("Canceled");
    } finally {
      await custom.deleteClusterCustomObject({ ...TEMPLATES, name: template }).catch(() => {});
    }
  });
});
