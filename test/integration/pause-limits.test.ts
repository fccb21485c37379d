import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { deleteSandbox } from "../../functions/api/delete-sandbox.ts";
import { findSandbox } from "../../functions/api/find-sandbox.ts";
import { pauseSandbox } from "../../functions/snapshots/pause-sandbox.ts";
import { resumeSandbox } from "../../functions/snapshots/resume-sandbox.ts";
import type { Tenant } from "../../lib/claims/api-keys.ts";
import { SNAPSHOT_PHASE } from "../../lib/crd/sandbox-snapshot.ts";
import { MAX_IMAGE_LAYERS } from "../../lib/snapshots/image-build.ts";
import { kube, until } from "./support/kube.ts";
import { pauseSandboxes } from "./support/pause-sandboxes.ts";
import { tenantPool } from "./support/tenant-pool.ts";

// Issue #39: a paused sandbox holds no pod, so its resume is a new hold of its team's: it counts
// against the team's sandbox limit as a create does (429 while the team is at it, the sandbox
// stays paused), against the real apiserver on kwok. And a pause adds a layer to the sandbox's
// image: one past the layer limit (MAX_IMAGE_LAYERS) is refused by the agent's commit, saying so,
// and the sandbox keeps running (the stand-in counts a `layers-<N>` image's layers as N).

const { cluster } = kube();
const TEAM = "pause-cap";
const t = tenantPool("pause-cap", TEAM, 3);
// The steps' deps with this team capped at one sandbox (the test host caps no such team).
const deps = { ...t.deps, envdPort: cluster.envdPort, teamLimits: { teams: { [TEAM]: 1 } } };
const user = `u-${randomBytes(3).toString("hex")}`;
const tenant: Tenant = { team: TEAM, user };

const { create } = pauseSandboxes(t, cluster);

// A pool whose image is at the layer limit already (kwok's images are names: the stand-in's agent
// counts 125 layers for it).
const LAYERS_IMAGE = `registry.local/sandbox/layers-${MAX_IMAGE_LAYERS}:1`;
const deep = tenantPool("pause-layers", "research", 1, {
  template: {
    spec: {
      containers: [
        { name: "sandbox", image: LAYERS_IMAGE, resources: { requests: { cpu: "250m", memory: "256Mi" } } },
      ],
    },
  },
});
const deepSandboxes = pauseSandboxes(deep, cluster);

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

describe("a pause and the image's layer limit", () => {
  it("refuses a pause whose snapshot would exceed the limit, saying so, and the sandbox keeps running", async () => {
    await deep.allIdle();
    const owner = `u-${randomBytes(3).toString("hex")}`;
    const id = await deepSandboxes.create(await deep.keyOf(owner));
    const who: Tenant = { team: "research", user: owner };
    const steps = { ...deep.deps, envdPort: cluster.envdPort };
    const [pod] = await deepSandboxes.carriers(id);
    const image = pod?.status?.containerStatuses?.find((c) => c.name === "sandbox")?.imageID ?? "";
    expect(image).toContain(`layers-${MAX_IMAGE_LAYERS}@sha256:`);
    expect(await pauseSandbox(steps, who, id, { waitMs: 60_000 })).toEqual({
      ok: false,
      reason: "failed",
      message:
        `pausing sandbox ${id} failed; it keeps running: commit of container sandbox failed: ` +
        `the sandbox's image has 125 layers; a pause adds one and 126 exceeds the limit of 125: ` +
        `a container runtime could not mount the snapshot to resume it (image ${image})`,
    });
    // Still running on the same pod, its snapshot undone (a never-resumed sandbox keeps none).
    const running = await findSandbox(steps, who, id, true);
    expect(running?.metadata?.uid).toBe(pod?.metadata?.uid);
    expect(running?.metadata?.labels?.["agentbox.navix.sh/sandbox-phase"]).toBe("running");
    await until("the failed pause's snapshot gone", 60_000, async () =>
      (await deepSandboxes.snapshotOf(id)) === undefined ? true : undefined,
    );
    expect(await deleteSandbox(steps, who, id)).toBe("released");
  });
});
