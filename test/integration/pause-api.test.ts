import { beforeAll, describe, expect, it } from "vitest";
import { httpsRequest } from "./support/http.ts";
import { kube, until } from "./support/kube.ts";
import { phaseOf } from "./support/steps.ts";
import { tenantPool } from "./support/tenant-pool.ts";

// The pause and resume routes' answers that need no commit (issue #39), native and E2B, from
// the test host: unknown sandboxes, bad bodies, and a sandbox that is not running yet (its
// image cannot be pulled, so it stays starting).

const { cluster } = kube();
const t = tenantPool("pause-api", "research", 1, {
  defaultStartupTimeout: "300s",
  template: {
    spec: { containers: [{ name: "sandbox", image: "registry.invalid/unpullable:1" }] },
  },
});

function host(method: string, path: string, body?: unknown) {
  return httpsRequest(`https://127.0.0.1:${cluster.hostPort}${path}`, cluster.caCert, {
    timeoutMs: 60_000,
    method,
    headers: { "content-type": "application/json", "x-api-key": t.key },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
}

beforeAll(() => t.allIdle());

describe("pause and resume routes", () => {
  it("an unknown sandbox is a 404 on both APIs; bad bodies are 400s naming the field", async () => {
    for (const op of ["pause", "resume"]) {
      const native = await host("POST", `/v1/sandboxes/sbx-nothing/${op}`);
      expect(native.status, op).toBe(404);
      expect(JSON.parse(native.body), op).toMatchObject({ error: { code: "NotFound" } });
      const e2b = await host("POST", `/e2b/sandboxes/sbx-nothing/${op}`, {});
      expect(JSON.parse(e2b.body), op).toEqual({ code: 404, message: 'sandbox "sbx-nothing" not found' });
    }
    expect((await host("POST", "/e2b/sandboxes/sbx-nothing/connect", { timeout: 60 })).status).toBe(404);
    expect((await host("GET", "/v1/sandboxes/sbx-nothing")).status).toBe(404);

    const resume = await host("POST", "/v1/sandboxes/sbx-nothing/resume", { timeout: -1 });
    expect(resume.status).toBe(400);
    expect(JSON.parse(resume.body)).toMatchObject({ error: { fields: [{ path: "timeout" }] } });
    expect((await host("POST", "/v1/sandboxes/sbx-nothing/resume", "{")).status).toBe(400);
    const memory = await host("POST", "/e2b/sandboxes/sbx-nothing/pause", { memory: true });
    expect(memory.status).toBe(400);
    expect(JSON.parse(memory.body).message).toMatch(/^memory: .*files/);
    const connect = await host("POST", "/e2b/v2/sandboxes/sbx-nothing/connect", { memory: true });
    expect(connect.status).toBe(400);
    const e2bResume = await host("POST", "/e2b/sandboxes/sbx-nothing/resume", { timeout: "soon" });
    expect(JSON.parse(e2bResume.body)).toMatchObject({
      code: 400,
      message: expect.stringMatching(/^timeout/),
    });
  });

  it("a sandbox still starting cannot be paused (409, on both APIs) and is not resumed (it is not paused)", async () => {
    const created = await host("POST", "/v1/sandboxes", { pool: `${t.ns}/p` });
    expect(created.status).toBe(201);
    const { sandboxId } = JSON.parse(created.body) as { sandboxId: string };
    await until(
      "the sandbox starting",
      30_000,
      async () => (await t.pods()).some((p) => phaseOf(p) === "starting") || undefined,
    );
    const native = await host("POST", `/v1/sandboxes/${sandboxId}/pause`);
    expect(native.status).toBe(409);
    expect(JSON.parse(native.body)).toMatchObject({ error: { code: "Conflict" } });
    const e2b = await host("POST", `/e2b/sandboxes/${sandboxId}/pause`, {});
    expect(e2b.status).toBe(409);
    expect(JSON.parse(e2b.body)).toMatchObject({ code: 409 });
    // Still starting, still its pod's: the refused pause changed nothing.
    const view = JSON.parse((await host("GET", `/v1/sandboxes/${sandboxId}`)).body) as { phase: string };
    expect(view.phase).toBe("starting");
    const resume = await host("POST", `/v1/sandboxes/${sandboxId}/resume`);
    expect(resume.status).toBe(409);
    expect((await host("DELETE", `/v1/sandboxes/${sandboxId}`)).status).toBe(204);
  });
});
