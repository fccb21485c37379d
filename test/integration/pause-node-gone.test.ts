import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { deleteSandbox } from "../../functions/api/delete-sandbox.ts";
import { handOverSnapshot, nodeReads } from "../../functions/snapshots/hand-over-snapshot.ts";
import { pauseSandbox } from "../../functions/snapshots/pause-sandbox.ts";
import { resumeSandbox } from "../../functions/snapshots/resume-sandbox.ts";
import { sweepSnapshots } from "../../functions/snapshots/sweep-snapshots.ts";
import { nodeKubeTransport } from "../../hosts/node/kube-transport.ts";
import type { Tenant } from "../../lib/claims/api-keys.ts";
import { type SandboxSnapshot, SNAPSHOT_FINALIZER, SNAPSHOT_PHASE } from "../../lib/crd/sandbox-snapshot.ts";
import { KubeClient } from "../../lib/kube/client.ts";
import type { Log } from "../../lib/util/log.ts";
import { withHeaders } from "./support/impersonation.ts";
import { kube, until } from "./support/kube.ts";
import { pauseSandboxes } from "./support/pause-sandboxes.ts";
import { AGENT_TEST_NODES, agentTestSnapshot } from "./support/snapshot-agent-nodes.ts";
import { tenantPool } from "./support/tenant-pool.ts";

// Review finding M5 on kwok: only the agent of a snapshot's spec.source.node acts on it, so a node
// that is gone (scaled down, failed) would strand its snapshots' images for ever. The tick's sweep
// hands such a snapshot over to the agent of a Ready node of its pool (the integration setup's
// kwok agent serves every kwok node), which deletes its images and lets a deleted one go, and never
// takes the rewrite for a new pause. AGENT_TEST_NODES.gone is a node that does not exist and that
// no agent of the run watches: a snapshot there waits for nobody but the hand-over.

const { cluster, kc } = kube();
const t = tenantPool("pause-gone", "research", 2);
const GONE = AGENT_TEST_NODES.gone;
const user = `u-${randomBytes(3).toString("hex")}`;
const tenant: Tenant = { team: "research", user };
let key = "";

/** logged are the warnings and infos the sweeps of this file logged. */
const logged: { level: string; msg: string; fields: Record<string, unknown> }[] = [];
const record =
  (level: string) =>
  (fields: object, msg = "") =>
    logged.push({ level, msg, fields: fields as Record<string, unknown> });
const log: Log = { debug() {}, info: record("info"), warn: record("warn"), error: record("error") };
// The steps' deps with this file's log, and its own one-time notices.
const deps = { ...t.deps, envdPort: cluster.envdPort, log, noticed: new Set<string>() };

const { snapshotOf, carriers, ...sandboxes } = pauseSandboxes(t, cluster);

/** pausedOnGoneNode makes a running sandbox, pauses it and moves its snapshot to the node that is gone. */
async function pausedOnGoneNode(): Promise<{ id: string; paused: SandboxSnapshot; moved: SandboxSnapshot }> {
  if (!key) key = await t.keyOf(user);
  await t.allIdle();
  const id = await sandboxes.create(key);
  expect(await pauseSandbox(deps, tenant, id, { waitMs: 60_000 })).toMatchObject({ ok: true });
  const paused = (await snapshotOf(id)) as SandboxSnapshot;
  expect(paused.status?.phase).toBe(SNAPSHOT_PHASE.PAUSED);
  // Its node goes, and its agent with it: the snapshot names a node that no longer exists.
  const moved = await deps.kube.replaceSnapshot(t.ns, {
    ...paused,
    spec: { ...paused.spec, source: { ...paused.spec.source, node: GONE } },
  });
  return { id, paused, moved };
}

/** sweep runs the tick's snapshot sweep over this file's namespace and its pool's pods. */
const sweep = async () => sweepSnapshots(deps, t.ns, await t.pods());

describe("a snapshot whose node is gone", () => {
  it("is handed to a live node's agent, which deletes its stale images; it stays paused and resumes", async () => {
    const { id, paused, moved } = await pausedOnGoneNode();
    // An earlier pause's image waits to be deleted, and no agent will: its node is gone.
    const stale = `registry.agentbox.test/agentbox-snapshots/${t.ns}/${id}/sandbox:g0@sha256:${"e".repeat(64)}`;
    await deps.kube.replaceSnapshotStatus(t.ns, {
      ...moved,
      status: { ...moved.status, staleImages: { "sandbox:g0": stale } },
    });
    const pods = await t.pods();
    const poolNodes = new Set(pods.map((p) => p.spec?.nodeName ?? ""));
    expect((await sweepSnapshots(deps, t.ns, pods)).writes).toBe(1);
    const handed = (await snapshotOf(id)) as SandboxSnapshot;
    const to = handed.spec.source.node;
    expect(to).not.toBe(GONE);
    expect(poolNodes.has(to)).toBe(true);
    expect(logged).toContainEqual({
      level: "info",
      msg: "snapshot handed over: its node is gone",
      fields: { sandboxId: id, from: GONE, to },
    });
    const events = (await deps.kube.listEvents(t.ns, `involvedObject.name=${id}`)).items;
    expect(events.find((e) => e.reason === "HandedOver")?.message).toBe(
      `node ${GONE} is gone; the snapshot agent of node ${to} deletes its images`,
    );
    // The new node's agent deletes the stale image and commits nothing: the same images, the
    // generation it answered still the pause's, though the rewrite made a new one.
    const after = await until("the stale image deleted by the new node's agent", 60_000, async () => {
      const s = await snapshotOf(id);
      return s && !s.status?.staleImages ? s : undefined;
    });
    expect(after.status).toMatchObject({
      phase: SNAPSHOT_PHASE.PAUSED,
      images: paused.status?.images,
      observedGeneration: paused.status?.observedGeneration,
    });
    expect(after.metadata?.generation).toBe((paused.metadata?.generation ?? 0) + 2);
    // Its node exists now: the next sweep leaves it alone.
    expect((await sweep()).writes).toBe(0);
    const resumed = await resumeSandbox(deps, tenant, id, { waitSeconds: 60 });
    expect(resumed).toMatchObject({ ok: true, resumed: true, sandbox: { sandboxId: id, phase: "running" } });
    expect(await deleteSandbox(deps, tenant, id)).toBe("released");
    await until(`sandbox ${id} gone`, 60_000, async () =>
      !(await snapshotOf(id)) && (await carriers(id)).length === 0 ? true : undefined,
    );
  }, 120_000);

  it("is finalized by a live node's agent once deleted: its finalizer does not keep it", async () => {
    const { id } = await pausedOnGoneNode();
    expect(await deleteSandbox(deps, tenant, id)).toBe("released");
    const deleting = (await snapshotOf(id)) as SandboxSnapshot;
    expect(deleting.metadata?.deletionTimestamp).toBeTruthy();
    expect(deleting.metadata?.finalizers).toContain(SNAPSHOT_FINALIZER);
    expect(deleting.spec.source.node).toBe(GONE);
    expect((await sweep()).writes).toBe(1);
    await until(`snapshot ${id} finalized and gone`, 60_000, async () =>
      (await snapshotOf(id)) === undefined ? true : undefined,
    );
    const handedOver = logged.filter(
      (l) => l.fields.sandboxId === id && l.msg === "snapshot handed over: its node is gone",
    );
    expect(handedOver.map((l) => l.fields.from)).toEqual([GONE]);
  });

  it("stays where it is, said once, while no Ready node runs a pod of its pool", async () => {
    // A snapshot of pool-a, which has no pod in this namespace, deleted while its node is gone.
    const id = `sb${randomBytes(5).toString("hex")}`;
    await deps.kube.createSnapshot(t.ns, agentTestSnapshot(id, GONE, { finalizer: true }));
    await deps.kube.deleteSnapshot(t.ns, id);
    for (let i = 0; i < 2; i++) expect((await sweep()).writes).toBe(0);
    const left = (await snapshotOf(id)) as SandboxSnapshot;
    expect(left.spec.source.node).toBe(GONE);
    expect(left.metadata?.finalizers).toContain(SNAPSHOT_FINALIZER);
    expect(logged.filter((l) => l.fields.sandboxId === id)).toEqual([
      {
        level: "warn",
        msg: `snapshot left where it is: node ${GONE} is gone and no Ready node runs a pod of pool pool-a; it is handed over once one does`,
        fields: { sandboxId: id },
      },
    ]);
    // Let it go by hand, as nothing else will.
    await deps.kube.replaceSnapshot(t.ns, { ...left, metadata: { ...left.metadata, finalizers: [] } });
    await until(`snapshot ${id} gone`, 20_000, async () =>
      (await snapshotOf(id)) === undefined ? true : undefined,
    );
  });

  it("stays where it is, said once, when the host may not read Nodes (403), naming the component", async () => {
    const id = `sb${randomBytes(5).toString("hex")}`;
    await deps.kube.createSnapshot(t.ns, agentTestSnapshot(id, GONE, { finalizer: true }));
    await deps.kube.deleteSnapshot(t.ns, id);
    const deleting = (await snapshotOf(id)) as SandboxSnapshot;
    // A host whose role lacks `nodes get`: an identity with no role at all.
    const noNodes = new KubeClient(
      nodeKubeTransport(withHeaders(kc, { "Impersonate-User": "agentbox-test:no-role" })),
    );
    const host = { ...deps, kube: noNodes, noticed: new Set<string>() };
    const before = logged.length;
    for (let i = 0; i < 2; i++) expect(await handOverSnapshot(host, deleting, nodeReads(host))).toBe(false);
    expect(logged.slice(before)).toEqual([
      {
        level: "warn",
        msg: "cannot tell whether a snapshot's node is gone: the host may not get nodes (apply components/snapshots)",
        fields: { err: expect.stringContaining("403") },
      },
    ]);
    const left = (await snapshotOf(id)) as SandboxSnapshot;
    expect(left.spec.source.node).toBe(GONE);
    await deps.kube.replaceSnapshot(t.ns, { ...left, metadata: { ...left.metadata, finalizers: [] } });
    await until(`snapshot ${id} gone`, 20_000, async () =>
      (await snapshotOf(id)) === undefined ? true : undefined,
    );
  });
});
