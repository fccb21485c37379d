import { randomBytes } from "node:crypto";
import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { deleteSandbox } from "../../functions/api/delete-sandbox.ts";
import { findSandbox } from "../../functions/api/find-sandbox.ts";
import { beginPause, pauseSandbox } from "../../functions/snapshots/pause-sandbox.ts";
import { resumeSandbox } from "../../functions/snapshots/resume-sandbox.ts";
import { sweepSnapshots } from "../../functions/snapshots/sweep-snapshots.ts";
import type { Tenant } from "../../lib/claims/api-keys.ts";
import { INCARNATION_ANNOTATION, RESUME_ATTEMPT_ANNOTATION } from "../../lib/crd/keys.ts";
import { type SandboxSnapshot, SNAPSHOT_PHASE } from "../../lib/crd/sandbox-snapshot.ts";
import { rfc3339 } from "../../lib/util/time.ts";
import { httpsRequest } from "./support/http.ts";
import { kube, until } from "./support/kube.ts";
import { pauseSandboxes } from "./support/pause-sandboxes.ts";
import { phaseOf, reconcileUntil } from "./support/steps.ts";
import { tenantPool } from "./support/tenant-pool.ts";

// Issue #39: pause and resume against the real apiserver on kwok, where the snapshot agent of the
// integration setup commits the envd stand-in's directories. The races and the convergence of a
// pause or resume whose caller died between two writes (the tick's sweep finishes or undoes it).

const { cluster } = kube();
const t = tenantPool("pause", "research", 3);
const deps = { ...t.deps, envdPort: cluster.envdPort };
const user = `u-${randomBytes(3).toString("hex")}`;
const tenant: Tenant = { team: "research", user };
let key = "";

const { snapshotOf, carriers, ...sandboxes } = pauseSandboxes(t, cluster);

/** create makes a running sandbox of the pool through the test host's E2B API (600 s): its id. */
async function create(extra: Record<string, unknown> = {}): Promise<string> {
  if (!key) key = await t.keyOf(user);
  return sandboxes.create(key, extra);
}

/** gone waits until nothing of sandbox id is left: no snapshot (its finalizer done), no pod. */
const gone = (id: string) =>
  until(`sandbox ${id} gone`, 60_000, async () =>
    !(await snapshotOf(id)) && (await carriers(id)).length === 0 ? true : undefined,
  );

describe("pause and resume on kwok", () => {
  it("a pause frees the pod and keeps the sandbox; a resume claims a pod with a new incarnation", async () => {
    await t.allIdle();
    const id = await create();
    const paused = await pauseSandbox(deps, tenant, id, { waitMs: 60_000 });
    expect(paused).toMatchObject({ ok: true });
    expect((await snapshotOf(id))?.status?.phase).toBe(SNAPSHOT_PHASE.PAUSED);
    // The pod went back to the pool: every pod idle again, none carries the id.
    await t.allIdle();
    expect(await carriers(id)).toEqual([]);
    expect(await pauseSandbox(deps, tenant, id)).toMatchObject({ ok: false, reason: "paused" });
    const resumed = await resumeSandbox(deps, tenant, id, { waitSeconds: 60 });
    expect(resumed).toMatchObject({ ok: true, resumed: true, sandbox: { sandboxId: id, phase: "running" } });
    const [pod] = await carriers(id);
    expect(pod?.metadata?.annotations?.[INCARNATION_ANNOTATION]).toBe("1");
    const s = await snapshotOf(id);
    expect(s?.status).toMatchObject({
      phase: SNAPSHOT_PHASE.RESUMED,
      resumes: 1,
      resume: { pod: pod?.metadata?.name },
    });
    // The pause and the resume are on the snapshot's record, as Events (kubectl describe sbs).
    const events = (await deps.kube.listEvents(t.ns, `involvedObject.name=${id}`)).items;
    expect(events.map((e) => e.reason).sort()).toEqual(["Paused", "Resumed"]);
    expect(await deleteSandbox(deps, tenant, id)).toBe("released");
    await gone(id);
  });

  it("two resumes racing give one sandbox on one pod", async () => {
    await t.allIdle();
    const id = await create();
    expect(await pauseSandbox(deps, tenant, id, { waitMs: 60_000 })).toMatchObject({ ok: true });
    await t.allIdle();
    const [a, b] = await Promise.all([
      resumeSandbox(deps, tenant, id, { waitSeconds: 60 }),
      resumeSandbox(deps, tenant, id, { waitSeconds: 60 }),
    ]);
    expect(a.ok && b.ok).toBe(true);
    if (!a.ok || !b.ok) return;
    expect(a.pod.metadata?.name).toBe(b.pod.metadata?.name);
    expect([a.resumed, b.resumed].sort()).toEqual([false, true]);
    expect((await carriers(id)).map((p) => p.metadata?.name)).toEqual([a.pod.metadata?.name]);
    expect(await deleteSandbox(deps, tenant, id)).toBe("released");
    await gone(id);
  });

  it("a pause racing a kill leaves nothing: the kill wins whichever lands first", async () => {
    await t.allIdle();
    const id = await create();
    const [paused, killed] = await Promise.all([
      pauseSandbox(deps, tenant, id, { waitMs: 60_000 }),
      deleteSandbox(deps, tenant, id),
    ]);
    expect(killed).toBe("released");
    // The pause either lost outright or finished before the kill, which then ended the paused one.
    if (paused.ok) expect(await findSandbox(deps, tenant, id)).toBeUndefined();
    else expect(paused.reason).toMatch(/not-found|not-running/);
    await gone(id);
    expect(await resumeSandbox(deps, tenant, id)).toMatchObject({ ok: false, reason: "not-found" });
  });

  it("a pause whose caller died after its first write is finished by the tick's sweep", async () => {
    await t.allIdle();
    const id = await create();
    const pod = await findSandbox(deps, tenant, id, true);
    expect(pod).toBeDefined();
    // The caller writes the snapshot (Committing) and dies: nobody waits for the agent.
    expect(await beginPause(deps, pod as V1Pod)).toEqual({ ok: true });
    await until("the agent's commit", 60_000, async () =>
      (await snapshotOf(id))?.status?.phase === SNAPSHOT_PHASE.COMMITTED ? true : undefined,
    );
    expect(await carriers(id)).toHaveLength(1);
    const report = await sweepSnapshots(deps, t.ns, await t.pods());
    expect(report.writes).toBeGreaterThanOrEqual(1);
    expect((await snapshotOf(id))?.status?.phase).toBe(SNAPSHOT_PHASE.PAUSED);
    await until("the pod back in the pool", 60_000, async () =>
      (await carriers(id)).length === 0 ? true : undefined,
    );
    expect(await deleteSandbox(deps, tenant, id)).toBe("released");
    await gone(id);
  });

  it("a resume whose caller died is taken over after its deadline, or marked resumed when it had claimed", async () => {
    await t.allIdle();
    const id = await create();
    expect(await pauseSandbox(deps, tenant, id, { waitMs: 60_000 })).toMatchObject({ ok: true });
    await t.allIdle();
    // A dead resume: Resuming with a deadline already past, and no pod claimed.
    const s = (await snapshotOf(id)) as SandboxSnapshot;
    const past = rfc3339(new Date(Date.now() - 1000));
    await deps.kube.replaceSnapshotStatus(t.ns, {
      ...s,
      status: { ...s.status, phase: SNAPSHOT_PHASE.RESUMING, resume: { attempt: "dead-1", until: past } },
    });
    await sweepSnapshots(deps, t.ns, await t.pods());
    expect((await snapshotOf(id))?.status?.phase).toBe(SNAPSHOT_PHASE.PAUSED);
    // A resume that claimed its pod and died before writing Resumed: the sweep sees the attempt
    // on the pod and finishes it.
    const resumed = await resumeSandbox(deps, tenant, id, { waitSeconds: 60 });
    expect(resumed.ok).toBe(true);
    const attempt = (await carriers(id))[0]?.metadata?.annotations?.[RESUME_ATTEMPT_ANNOTATION];
    expect(attempt).toBeTruthy();
    const done = (await snapshotOf(id)) as SandboxSnapshot;
    await deps.kube.replaceSnapshotStatus(t.ns, {
      ...done,
      status: {
        ...done.status,
        phase: SNAPSHOT_PHASE.RESUMING,
        resume: { attempt: attempt ?? "", until: past },
      },
    });
    await sweepSnapshots(deps, t.ns, await t.pods());
    expect((await snapshotOf(id))?.status).toMatchObject({ phase: SNAPSHOT_PHASE.RESUMED });
    expect((await carriers(id)).filter((p) => phaseOf(p) === "running")).toHaveLength(1);
    expect(await deleteSandbox(deps, tenant, id)).toBe("released");
    await gone(id);
  });

  it("auto-pause: a sandbox created with autoPause pauses at the end of its lifetime, or ends if it cannot within the grace", async () => {
    await t.allIdle();
    const id = await create({ autoPause: true });
    const plain = await create();
    // E2B's detail says which one pauses at its timeout (the SDK's getInfo().lifecycle).
    const lifecycle = async (sid: string) =>
      (
        JSON.parse(
          (
            await httpsRequest(`https://127.0.0.1:${cluster.hostPort}/e2b/sandboxes/${sid}`, cluster.caCert, {
              headers: { "X-API-KEY": key },
              timeoutMs: 30_000,
            })
          ).body,
        ) as { lifecycle?: unknown }
      ).lifecycle;
    expect(await lifecycle(id)).toEqual({ onTimeout: "pause", autoResume: false });
    expect(await lifecycle(plain)).toEqual({ onTimeout: "kill", autoResume: false });
    try {
      // Past both lifetimes (600 s) by the steps' clock: the autoPause one pauses, the other ends.
      t.deps.clock.offsetMs = 601_000;
      await reconcileUntil(deps, t.ns, "p", "the auto-pause", async () =>
        (await snapshotOf(id))?.status?.phase === SNAPSHOT_PHASE.PAUSED && (await carriers(id)).length === 0
          ? true
          : undefined,
      );
      expect(await snapshotOf(plain)).toBeUndefined();
      await reconcileUntil(deps, t.ns, "p", "the plain one released", async () =>
        (await carriers(plain)).length === 0 ? true : undefined,
      );
      // Resumed, it pauses again at its timeout; one whose pause cannot finish within the grace
      // (here: the grace is over before the first run) ends as a timeout would.
      t.deps.clock.offsetMs = 0;
      // Resumed without a timeout (the SDK's connect sends none): its whole lifetime again, not
      // the nothing it had left when it paused at its end.
      expect(await resumeSandbox(deps, tenant, id, { waitSeconds: 60 })).toMatchObject({ ok: true });
      const a = (await carriers(id))[0]?.metadata?.annotations ?? {};
      const given =
        Date.parse(a["agentbox.navix.sh/end-at"] ?? "") - Date.parse(a["agentbox.navix.sh/started-at"] ?? "");
      expect(given / 1000).toBe(600);
      t.deps.clock.offsetMs = (600 + 5 * 60 + 2) * 1000;
      await reconcileUntil(deps, t.ns, "p", "the release after the grace", async () =>
        (await carriers(id)).filter((p) => phaseOf(p) === "running").length === 0 ? true : undefined,
      );
      expect((await snapshotOf(id))?.status?.phase).not.toBe(SNAPSHOT_PHASE.PAUSED);
    } finally {
      t.deps.clock.offsetMs = 0;
    }
    await gone(id);
    await t.allIdle();
  });
});
