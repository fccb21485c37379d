import { describe, expect, it } from "vitest";
import { ContinueRejected, listSandboxes } from "../../functions/api/list-sandboxes.ts";
import type { HostDeps } from "../../functions/host-deps.ts";
import { KubeClient } from "../../lib/kube/client.ts";
import { KubeError } from "../../lib/kube/errors.ts";

// What a list makes of the apiserver refusing its continue token (the integration test sends a
// garbled one to the real apiserver; an expired one needs an etcd compaction, so its answer, the
// 410 Expired Status, is scripted here).

/** answering lists with one scripted apiserver answer. */
function answering(status: number, body: object) {
  return {
    kube: new KubeClient(async () => ({ status, body: JSON.stringify(body) })),
    now: () => new Date("2026-11-21T12:00:00Z"),
  } as unknown as HostDeps;
}

const tenant = { team: "t", user: "u" };
const status = (code: number, reason: string, message: string) => ({
  kind: "Status",
  apiVersion: "v1",
  status: "Failure",
  code,
  reason,
  message,
});

describe("listSandboxes with a continue token", () => {
  it("turns a 410 Expired into ContinueRejected (expired), and a 400 into ContinueRejected", async () => {
    const expired = answering(410, status(410, "Expired", "The provided continue parameter is too old"));
    const e = await listSandboxes(expired, tenant, { limit: 5, continue: "old" }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ContinueRejected);
    expect((e as ContinueRejected).expired).toBe(true);
    expect((e as Error).message).toContain("list again from the first page");
    const garbled = answering(400, status(400, "BadRequest", "continue key is not valid: illegal base64"));
    const g = await listSandboxes(garbled, tenant, { limit: 5, continue: "x" }).catch((x: unknown) => x);
    expect(g).toBeInstanceOf(ContinueRejected);
    expect((g as ContinueRejected).expired).toBe(false);
  });

  it("leaves other errors, and a 400 without a token, as they are", async () => {
    const noToken = answering(400, status(400, "BadRequest", "bad selector"));
    expect(await listSandboxes(noToken, tenant, { limit: 5 }).catch((x: unknown) => x)).toBeInstanceOf(
      KubeError,
    );
    const down = answering(503, status(503, "ServiceUnavailable", "etcd"));
    const d = await listSandboxes(down, tenant, { limit: 5, continue: "t" }).catch((x: unknown) => x);
    expect(d).toBeInstanceOf(KubeError);
    expect((d as KubeError).status).toBe(503);
  });
});
