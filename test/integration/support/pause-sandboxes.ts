// What the kwok pause tests (issue #39) share over a tenantPool: sandboxes created through the
// test host's E2B API, a sandbox's SandboxSnapshot (or none) and the live pods carrying its id.
import type { V1Pod } from "@kubernetes/client-node";
import { expect } from "vitest";
import { SANDBOX_ID_LABEL } from "../../../lib/crd/keys.ts";
import type { SandboxSnapshot } from "../../../lib/crd/sandbox-snapshot.ts";
import { isNotFound } from "../../../lib/kube/errors.ts";
import { httpsRequest } from "./http.ts";
import type { tenantPool } from "./tenant-pool.ts";

type TenantPool = ReturnType<typeof tenantPool>;

/**
 * pauseSandboxes gives a pause test its helpers over `t` (its pool "p") and the test cluster:
 * `create(key, extra)` a running sandbox of the pool through the host's E2B API (timeout 600 s
 * unless `extra` says otherwise): its id; `snapshotOf(id)`, absent when there is none;
 * `carriers(id)`, the pool's pods with the sandbox's id label, not terminating.
 */
export function pauseSandboxes(t: TenantPool, cluster: { hostPort: number; caCert: string }) {
  const create = async (key: string, extra: Record<string, unknown> = {}): Promise<string> => {
    const res = await httpsRequest(`https://127.0.0.1:${cluster.hostPort}/e2b/sandboxes`, cluster.caCert, {
      timeoutMs: 90_000,
      method: "POST",
      headers: { "content-type": "application/json", "X-API-KEY": key },
      body: JSON.stringify({ templateID: `${t.ns}/p`, timeout: 600, ...extra }),
    });
    expect(res.status, res.body).toBe(201);
    return (JSON.parse(res.body) as { sandboxID: string }).sandboxID;
  };
  const snapshotOf = (id: string): Promise<SandboxSnapshot | undefined> =>
    t.deps.kube.getSnapshot(t.ns, id).catch((e: unknown) => {
      if (isNotFound(e)) return undefined;
      throw e;
    });
  const carriers = async (id: string): Promise<V1Pod[]> =>
    (await t.pods()).filter(
      (p) => p.metadata?.labels?.[SANDBOX_ID_LABEL] === id && !p.metadata?.deletionTimestamp,
    );
  return { create, snapshotOf, carriers };
}
