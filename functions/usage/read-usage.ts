import pLimit from "p-limit";
import type { Tenant } from "../../lib/claims/api-keys.ts";
import { mayReadRecord } from "../../lib/claims/history-scope.ts";
import { tenantSelector } from "../../lib/claims/tenant-scope.ts";
import { SANDBOX_ID_LABEL } from "../../lib/crd/keys.ts";
import { isSandboxId } from "../../lib/lifecycle/sandbox-ids.ts";
import type { UsageSample } from "../../lib/usage/sample.ts";
import type { UsageRange } from "../../lib/usage/store.ts";
import { findSandbox } from "../api/find-sandbox.ts";
import type { HostDeps } from "../host-deps.ts";

/** UsageReadDeps: what reading a sandbox's series needs (the store undefined: this host keeps none). */
export type UsageReadDeps = HostDeps;

/** LATEST_WINDOW_MS: the latest sample of a sandbox is looked for this far back (E2B's list of running sandboxes). */
export const LATEST_WINDOW_MS = 10 * 60_000;

/** UsageRead is a series, or why there is none: not the caller's (or no such sandbox), or no store here. */
export type UsageRead =
  | { ok: true; samples: UsageSample[] }
  | { ok: false; reason: "not-found" | "no-store" };

/**
 * mayRead tells whether the tenant may see sandbox id's series: once the sandbox ended, its
 * history record is the tenant's (mayReadRecord; a series covers the sandbox's whole life, and
 * is read after it too); while it runs, the tenant may see its pod, as GET /sandboxes/{id} finds
 * it (owner or admin). The record is read first: one keyed row, there only once the sandbox
 * ended, which is what most reads of a series are about, whereas findSandbox on a miss of the
 * watch cache lists every pod of every namespace uncached (an etcd scan per read). Another
 * tenant's sandbox is answered exactly like one that does not exist.
 */
async function mayRead(deps: UsageReadDeps, tenant: Tenant, id: string): Promise<boolean> {
  if (!isSandboxId(id)) return false;
  const record = await deps.history.get(id);
  if (record) return mayReadRecord(tenant, record);
  return (await findSandbox(deps, tenant, id)) !== undefined;
}

/**
 * readUsage answers a sandbox's series within `range` (oldest first), as the store keeps it: only
 * the sandbox's own samples (from its claim on, never a previous tenant's run: see
 * lib/usage/sandbox-runs.ts). A store that cannot answer now throws HistoryUnavailable, which
 * the routes turn into a 503 with Retry-After.
 */
export async function readUsage(
  deps: UsageReadDeps,
  tenant: Tenant,
  id: string,
  range: UsageRange,
): Promise<UsageRead> {
  if (!(await mayRead(deps, tenant, id))) return { ok: false, reason: "not-found" };
  if (!deps.usage) return { ok: false, reason: "no-store" };
  return { ok: true, samples: await deps.usage.range(id, range) };
}

/**
 * latestUsage answers the latest sample (within LATEST_WINDOW_MS; one row read newest first per
 * id, not the window's samples) of each of `ids` that is one of
 * the tenant's sandboxes now (one cached list of its claimed pods, not a read per id), as E2B's
 * `GET /sandboxes/metrics` does for running sandboxes; ids that are not the tenant's, or have no
 * recent sample, are left out. Undefined: this host keeps no store.
 */
export async function latestUsage(
  deps: UsageReadDeps,
  tenant: Tenant,
  ids: readonly string[],
): Promise<Map<string, UsageSample> | undefined> {
  const store = deps.usage;
  if (!store) return undefined;
  const wanted = new Set(ids.filter(isSandboxId));
  const out = new Map<string, UsageSample>();
  if (wanted.size === 0) return out;
  const selector = [SANDBOX_ID_LABEL, ...tenantSelector(tenant)].join(",");
  const pods = (await deps.kube.listPods(undefined, selector, { cached: true })).items;
  const owned = new Set(
    pods
      .filter((p) => !p.metadata?.deletionTimestamp)
      .map((p) => p.metadata?.labels?.[SANDBOX_ID_LABEL] ?? "")
      .filter((id) => wanted.has(id)),
  );
  const from = new Date(deps.now().getTime() - LATEST_WINDOW_MS).toISOString();
  const limit = pLimit(8);
  await Promise.all(
    [...owned].map((id) =>
      limit(async () => {
        const [last] = await store.range(id, { from, limit: 1, newest: true });
        if (last) out.set(id, last);
      }),
    ),
  );
  return out;
}
