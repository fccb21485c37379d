import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { deleteSandbox } from "../../functions/api/delete-sandbox.ts";
import { pauseSandbox } from "../../functions/snapshots/pause-sandbox.ts";
import { resumeSandbox } from "../../functions/snapshots/resume-sandbox.ts";
import type { Tenant } from "../../lib/claims/api-keys.ts";
import { SNAPSHOT_PHASE } from "../../lib/crd/sandbox-snapshot.ts";
import { kube, until } from "./support/kube.ts";
import { pauseSandboxes } from "./support/pause-sandboxes.ts";
import { tenantPool } from "./support/tenant-pool.ts";

// Issue #39: a paused sandbox holds no pod, so its resume is a new hold of its team's: it counts
// against the team's sandbox limit as a create does (429 while the team is at it, the sandbox
// stays paused), against the real apiserver on kwok.

const { cluster } = kube();
const TEAM = "pause-cap";
const t = tenantPool("pause-cap", TEAM, 3);
// The steps' deps with this team capped at one sandbox (the test host caps no such team).
const deps = { ...t.deps, envdPort: cluster.envdPort, teamLimits: { teams: { [TEAM]: 1 } } };
const user = `u-${randomBytes(3).toString("hex")}`;
const tenant: Tenant = { team: TEAM, user };

const { create } = pauseSandboxes(t, cluster);

describe("resume and the team's sandbox limit", () => {
  it("refuses a resume while the team holds its limit (429, still paused) and resumes once it has room", async () => {
    await t.allIdle();
    const key = await t.keyOf(user);
    const paused = await create(key);
    expect(await pauseSandbox(deps, tenant, paused, { waitMs: 60_000 })).toMatchObject({ ok: true });
    const other = await create(key);
    // The team holds one (the other) of its one: the resume is refused and claims nothing.
    expect(await resumeSandbox(deps, tenant, paused, { waitSeconds: 60 })).toMatchObject({
      ok: false,
      reason: "limited",
      message: expect.stringContaining(`team "${TEAM}" holds 1 sandboxes, its limit is 1`),
    });
    expect((await deps.kube.getSnapshot(t.ns, paused)).status?.phase).toBe(SNAPSHOT_PHASE.PAUSED);
    expect(await deleteSandbox(deps, tenant, other)).toBe("released");
    await t.allIdle();
    const resumed = await until("the resume once the team has room", 60_000, async () => {
      const r = await resumeSandbox(deps, tenant, paused, { waitSeconds: 60 });
      return r.ok ? r : undefined;
    });
    expect(resumed.sandbox).toMatchObject({ sandboxId: paused, phase: "running" });
    expect(await deleteSandbox(deps, tenant, paused)).toBe("released");
  });
});
