import { beforeAll, describe, expect, it } from "vitest";
import { SANDBOX_ID_LABEL } from "../../lib/crd/keys.ts";
import { httpsRequest } from "./support/http.ts";
import { kube, until } from "./support/kube.ts";
import { runSdkScript } from "./support/sdk-script.ts";
import { isReady, phaseOf } from "./support/steps.ts";
import { tenantPool } from "./support/tenant-pool.ts";

// Pause and resume (issue #39) through the official e2b SDK, unmodified, on a kwok pool: the
// kwok nodes' snapshot agent commits the envd stand-in's directory of the pod (the sandbox's
// files), the pod goes back to the pool, and a connect claims an idle pod to the snapshot. The
// SDK reaches envd through the sandbox router (E2B_SANDBOX_URL), which follows the sandbox to
// whichever pod it runs on.

const { cluster, custom } = kube();
const SNAPSHOTS = { group: "agents.navix.sh", version: "v1alpha1", plural: "sandboxsnapshots" };
const t = tenantPool("pause", "research", 2);
const router = `http://127.0.0.1:${cluster.dataPlanePort}`;

beforeAll(() => t.allIdle());

const lastJson = (stdout: string) =>
  JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}") as Record<string, unknown>;

/** idle counts the pool's idle, Ready pods that run no sandbox. */
const idle = async () =>
  (await t.pods()).filter(
    (p) => phaseOf(p) === "idle" && isReady(p) && !p.metadata?.labels?.[SANDBOX_ID_LABEL],
  ).length;

const host = (method: string, path: string, body?: unknown) =>
  httpsRequest(`https://127.0.0.1:${cluster.hostPort}${path}`, cluster.caCert, {
    timeoutMs: 60_000,
    method,
    headers: { "x-api-key": t.key, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

describe("pause and resume through the official e2b SDK", () => {
  it("keeps the files and the id across a pause, gives the pod back meanwhile, and a kill of a paused one ends it", async () => {
    const sdk = (env: Record<string, string>) =>
      runSdkScript(
        "e2b-sdk-pause.ts",
        { E2B_API_KEY: t.key, E2B_SANDBOX_URL: router, E2B_TEST_TEMPLATE: `${t.ns}/p`, ...env },
        120_000,
      ).then(lastJson);

    const paused = await sdk({ E2B_TEST_DO: "pause" });
    expect(paused.error).toBeUndefined();
    expect(paused.paused).toBe(true);
    const id = String(paused.sandboxId);
    expect(id).toMatch(/^sbx-/);
    // Its pod went back to the pool: both pods idle, none holds the sandbox.
    await until("the paused sandbox's pod idle again", 60_000, async () => (await idle()) === 2 || undefined);
    expect((await t.pods()).filter((p) => p.metadata?.labels?.[SANDBOX_ID_LABEL] === id)).toEqual([]);

    // The native GET shows it paused, with its snapshot images; E2B's v1 list (running only) does not.
    const native = await host("GET", `/v1/sandboxes/${id}`);
    expect(native.status).toBe(200);
    const view = JSON.parse(native.body) as Record<string, unknown>;
    expect(view).toMatchObject({ sandboxId: id, phase: "paused", pod: "", metadata: { run: "pause" } });
    expect(Object.values(view.images as Record<string, string>).join()).toContain("agentbox-snapshots/");
    const v1 = JSON.parse((await host("GET", "/e2b/sandboxes")).body) as { sandboxID: string }[];
    expect(v1.map((s) => s.sandboxID)).not.toContain(id);

    const resumed = await sdk({ E2B_TEST_DO: "resume", E2B_TEST_SANDBOX: id });
    expect(resumed.error, String(resumed.step)).toBeUndefined();
    expect(resumed).toMatchObject({
      info: { state: "paused", metadata: { run: "pause" }, sandboxId: id },
      listedPaused: [{ sandboxId: id, state: "paused" }],
      pausedAgain: false,
      connectedId: id,
      stateAfterConnect: "running",
      text: "written before the pause\n",
      blobEqual: true,
      ran: "written before the pause\n",
      repaused: true,
      stateAfterRepause: "paused",
      killed: true,
      afterKill: expect.stringMatching(/^SandboxNotFoundError|NotFoundError/),
    });
    // Killed while paused: nothing left of it, its snapshot included (once the agent deleted its images).
    expect((await host("GET", `/e2b/sandboxes/${id}`)).status).toBe(404);
    await until("the killed sandbox's snapshot gone", 60_000, async () => {
      const left = await custom.listNamespacedCustomObject({ ...SNAPSHOTS, namespace: t.ns });
      return (left as { items: unknown[] }).items.length === 0 || undefined;
    });
    await until("both pods idle after the kill", 60_000, async () => (await idle()) === 2 || undefined);
  }, 300_000);

  it("serves the native pause and resume, and E2B's resume: 201, then 409 while it runs", async () => {
    const created = await host("POST", "/v1/sandboxes", { pool: `${t.ns}/p`, wait: true, timeout: 600 });
    expect(created.status).toBe(201);
    const { sandboxId: id } = JSON.parse(created.body) as { sandboxId: string };
    const paused = await host("POST", `/v1/sandboxes/${id}/pause`);
    expect(paused.status, paused.body).toBe(200);
    expect(JSON.parse(paused.body)).toMatchObject({ sandboxId: id, phase: "paused", pod: "" });
    expect((await host("POST", `/v1/sandboxes/${id}/pause`)).status).toBe(409);
    // The native list shows it when paused ones are asked for, and not among the running ones.
    const listed = await host("GET", `/v1/sandboxes?phase=paused&pool=${t.ns}/p`);
    expect(listed.status, listed.body).toBe(200);
    expect(
      (JSON.parse(listed.body) as { sandboxes: { sandboxId: string; phase: string }[] }).sandboxes,
    ).toEqual([expect.objectContaining({ sandboxId: id, phase: "paused" })]);
    const running = await host("GET", "/v1/sandboxes?phase=running");
    expect(running.body).not.toContain(id);
    const info = JSON.parse((await host("GET", `/e2b/sandboxes/${id}`)).body) as { state: string };
    expect(info.state).toBe("paused");

    const resumed = await host("POST", `/e2b/sandboxes/${id}/resume`, {});
    expect(resumed.status, resumed.body).toBe(201);
    expect(JSON.parse(resumed.body)).toMatchObject({ sandboxID: id, envdAccessToken: expect.any(String) });
    const again = await host("POST", `/e2b/sandboxes/${id}/resume`, {});
    expect(again.status).toBe(409);
    expect(JSON.parse(again.body)).toMatchObject({ code: 409 });

    expect((await host("POST", `/v1/sandboxes/${id}/pause`)).status).toBe(200);
    const back = await host("POST", `/v1/sandboxes/${id}/resume`, { timeout: 120 });
    expect(back.status, back.body).toBe(200);
    expect(JSON.parse(back.body)).toMatchObject({ sandboxId: id, phase: "running" });
    expect((await host("DELETE", `/v1/sandboxes/${id}`)).status).toBe(204);
  }, 180_000);
});
