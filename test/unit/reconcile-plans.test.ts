import type { V1Pod } from "@kubernetes/client-node";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { PoolScaleDownPolicy } from "../../lib/crd/autoscaling.ts";
import { REPLACE_ON_RESET_ANNOTATION, WAITER_UNTIL_ANNOTATION } from "../../lib/crd/keys.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { REPLACE_BY_POLICY } from "../../lib/lifecycle/release-intent.ts";
import { resetBlocker, STOPPING_TIMEOUT_MS } from "../../lib/lifecycle/reset-progress.ts";
import { poolOwnerReference } from "../../lib/membership/pod-ownership.ts";
import { podRevision } from "../../lib/pool/render-pod.ts";
import { planFailures } from "../../lib/reconcile/failures.ts";
import { planFinalizeDeleted } from "../../lib/reconcile/finalize-deleted.ts";
import { planIdleRelease, reportedOnly } from "../../lib/reconcile/idle-release.ts";
import { planMaterialise } from "../../lib/reconcile/materialise.ts";
import { planStarting, SLOW_PULL_MS } from "../../lib/reconcile/starting.ts";
import { planStatus } from "../../lib/reconcile/status.ts";
import { planServedIdle, planStopping } from "../../lib/reconcile/stopping.ts";

// The planners behind each reconcile step, on plain objects with a fixed clock.

const NOW = new Date("2026-11-21T12:00:00Z");
const policy = v.parse(PoolScaleDownPolicy, {});
const PHASE = "agentbox.navix.sh/sandbox-phase";
const STATE = "agentbox.navix.sh/inplace-update-state";

function pool(
  over: Partial<SandboxPool["metadata"]> = {},
  spec: Partial<SandboxPool["spec"]> = {},
  status?: SandboxPool["status"],
): SandboxPool {
  return {
    apiVersion: "agents.navix.sh/v1alpha1",
    kind: "SandboxPool",
    metadata: {
      name: "p",
      namespace: "ns",
      uid: "pool-uid",
      resourceVersion: "10",
      finalizers: ["agentbox.navix.sh/finalizer"],
      ...over,
    },
    spec: {
      replicas: 1,
      podCreationImagePolicy: "IdleImage",
      idleImage: "idle:1",
      template: { spec: { containers: [{ name: "main", image: "base:1" }] } },
      ...spec,
    },
    ...(status ? { status } : {}),
  } as SandboxPool;
}

function pod(
  name: string,
  phase: string,
  over: {
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
    deleting?: boolean;
    status?: V1Pod["status"];
    image?: string;
    finalizers?: string[];
  } = {},
): V1Pod {
  return {
    metadata: {
      name,
      namespace: "ns",
      uid: `${name}-uid`,
      resourceVersion: "5",
      creationTimestamp: new Date("2026-11-21T11:00:00Z"),
      labels: { "agentbox.navix.sh/sandbox-pool": "p", [PHASE]: phase, ...over.labels },
      ownerReferences: [poolOwnerReference(pool())],
      annotations: over.annotations ?? {},
      finalizers: over.finalizers ?? ["agentbox.navix.sh/sandbox-protection"],
      ...(over.deleting ? { deletionTimestamp: new Date("2026-11-21T11:59:00Z") } : {}),
    },
    spec: { containers: [{ name: "main", image: over.image ?? "idle:1" }] },
    status: over.status ?? {
      phase: "Running",
      conditions: [{ type: "Ready", status: "True" }],
      containerStatuses: [
        {
          name: "main",
          image: over.image ?? "idle:1",
          imageID: "idle@sha256:1",
          containerID: "c1",
          ready: true,
          restartCount: 0,
          state: { running: {} },
        },
      ],
    },
  } as V1Pod;
}

const claimed = { "agentbox.navix.sh/sandbox-id": "sbx-1" };

/** readyWith is a running, ready pod status whose one container runs the image with imageID. */
function readyWith(imageID: string): V1Pod["status"] {
  return {
    phase: "Running",
    conditions: [{ type: "Ready", status: "True" }],
    containerStatuses: [
      {
        name: "main",
        image: "idle:1",
        imageID,
        containerID: "c1",
        ready: true,
        restartCount: 0,
        state: { running: {} },
      },
    ],
  };
}

describe("planFinalizeDeleted", () => {
  it("records claimed pods and removes only our finalizer, by index, under a resourceVersion test", () => {
    const actions = planFinalizeDeleted(
      [
        pod("a", "running", {
          deleting: true,
          annotations: claimed,
          labels: { "agentbox.navix.sh/sandbox-id": "sbx-1" },
          finalizers: ["x/y", "agentbox.navix.sh/sandbox-protection"],
        }),
        pod("b", "idle", { deleting: true }),
        pod("c", "idle"),
        pod("d", "idle", { deleting: true, finalizers: [] }),
      ],
      NOW,
    );
    expect(actions.map((a) => a.target.name)).toEqual(["a", "b"]);
    expect(actions[0]!.record?.sandboxId).toBe("sbx-1");
    expect(actions[0]!.write).toEqual({
      op: "patch",
      patch: [
        { op: "test", path: "/metadata/resourceVersion", value: "5" },
        { op: "remove", path: "/metadata/finalizers/1" },
      ],
    });
    expect(actions[1]!.record).toBeUndefined();
  });
});

describe("planFailures", () => {
  it("deletes failed pods with a Failed record when claimed", () => {
    const failed = pod("f", "running", {
      annotations: claimed,
      status: { phase: "Failed", reason: "Evicted", message: "node pressure" },
    });
    const [action] = planFailures([failed], { idleImages: { main: "idle:1" } }, NOW);
    expect(action?.write).toEqual({ op: "delete", uid: "f-uid", resourceVersion: "5" });
    expect(action?.record).toMatchObject({
      stopReason: "Failed",
      failureReason: "Evicted",
      failureMessage: "node pressure",
    });
    expect(action?.event?.type).toBe("Warning");
  });

  it("releases a running sandbox whose container was replaced, with the OOM details", () => {
    const state = JSON.stringify({
      phase: "completed",
      targetPodPhase: "running",
      targetImages: { main: "agent:1" },
      stableContainerStatuses: { main: { containerID: "c1", restartCount: 0 } },
    });
    const restarted = pod("r", "running", {
      image: "agent:1",
      annotations: { ...claimed, [STATE]: state },
      status: {
        phase: "Running",
        containerStatuses: [
          {
            name: "main",
            image: "agent:1",
            imageID: "a@sha256:2",
            containerID: "c2",
            ready: true,
            restartCount: 1,
            state: { running: {} },
            lastState: { terminated: { exitCode: 137, reason: "OOMKilled" } },
          },
        ],
      },
    });
    // The pool's reset (a hash of its pod template) is computed for a pod released, and only then.
    let resets = 0;
    const reset = () => {
      resets++;
      return { idleImages: { main: "idle:1" } };
    };
    const [action] = planFailures([restarted], reset, NOW);
    expect(resets).toBe(1);
    expect(action?.why).toContain("OOMKilled");
    const patch = action?.write.op === "patch" ? action.write.patch : [];
    expect(patch[1]).toEqual({
      op: "test",
      path: "/metadata/labels/agentbox.navix.sh~1sandbox-phase",
      value: "running",
    });
    expect(patch).toContainEqual({
      op: "add",
      path: "/metadata/annotations/agentbox.navix.sh~1exit-code",
      value: "137",
    });
    expect(
      planFailures([pod("ok", "running", { image: "agent:1", annotations: { [STATE]: state } })], reset, NOW),
    ).toEqual([]);
    expect(resets).toBe(1);
    // A completed pause holds the pod (its uid given): the pause releases it, not as Failed.
    expect(planFailures([restarted], reset, NOW, new Set(["r-uid"]))).toEqual([]);
    expect(planFailures([restarted], reset, NOW, new Set(["other-uid"]))).toHaveLength(1);
  });
});

describe("planStarting and planStopping", () => {
  const starting = (extra: Record<string, string> = {}, status?: V1Pod["status"]) =>
    pod("s", "starting", {
      image: "agent:1",
      annotations: {
        ...claimed,
        [STATE]: JSON.stringify({
          phase: "starting",
          targetImages: { main: "agent:1" },
          targetPodPhase: "running",
          updateTimestamp: "2026-11-21T11:59:00Z",
          lastContainerStatuses: { main: { imageID: "idle@sha256:1", containerID: "c1" } },
        }),
        ...extra,
      },
      ...(status ? { status } : {}),
    });
  /** ran: the target image runs in a new container (the kubelet finished the start). */
  const ran: V1Pod["status"] = {
    phase: "Running",
    containerStatuses: [
      {
        name: "main",
        image: "agent:1",
        imageID: "agent@sha256:9",
        containerID: "c2",
        ready: true,
        restartCount: 1,
        state: { running: {} },
      },
    ],
  };

  it("completes a start once the target image runs in a new container", () => {
    const done = starting({}, ran);
    expect(planStarting(pool(), [done], new Map(), NOW).map((a) => a.why)).toEqual(["sandbox is running"]);
  });

  it("times out a start past the annotation's limit, and otherwise writes the diagnosis once", () => {
    const pulling = {
      phase: "Running",
      containerStatuses: [
        {
          name: "main",
          image: "agent:1",
          imageID: "",
          ready: false,
          restartCount: 0,
          state: { waiting: { reason: "ImagePullBackOff", message: "back-off" } },
        },
      ],
    } as V1Pod["status"];
    const late = starting({ "agentbox.navix.sh/startup-timeout": "30" }, pulling);
    // The start is released as Failed/StartupTimeout, its pod to be replaced, in one patch guarded
    // by resourceVersion and phase: a start that completed meanwhile makes it fail.
    const [timeout, ...others] = planStarting(pool(), [late], new Map(), NOW);
    expect(others).toEqual([]);
    expect(timeout?.record).toBeUndefined();
    expect(timeout?.event).toMatchObject({ type: "Warning", reason: "StartupTimeout" });
    const mark = timeout?.write.op === "patch" ? timeout.write.patch : [];
    expect(mark.slice(0, 2)).toEqual([
      { op: "test", path: "/metadata/resourceVersion", value: "5" },
      { op: "test", path: "/metadata/labels/agentbox.navix.sh~1sandbox-phase", value: "starting" },
    ]);
    const written = Object.fromEntries(
      mark.flatMap((op) =>
        op.op === "add" || op.op === "replace"
          ? [[op.path.split("/").pop()?.replace("~1", "/"), op.value]]
          : [],
      ),
    );
    expect(written).toMatchObject({
      "agentbox.navix.sh/sandbox-phase": "stopping",
      "agentbox.navix.sh/stop-reason": "Failed",
      "agentbox.navix.sh/failure-reason": "StartupTimeout",
      "agentbox.navix.sh/terminated-at": "2026-11-21T12:00:00Z",
      [REPLACE_ON_RESET_ANNOTATION]: "its start timed out",
    });
    expect(mark.some((op) => op.path.startsWith("/spec/"))).toBe(false); // no image swap
    const [diagnose] = planStarting(pool(), [starting({}, pulling)], new Map(), NOW);
    expect(diagnose?.why).toBe("diagnose: ImagePullBackOff");
    const detail = diagnose?.write.op === "patch" ? (diagnose.write.patch[1] as { value: string }).value : "";
    expect(
      planStarting(
        pool(),
        [starting({ "agentbox.navix.sh/sandbox-status-detail": detail }, pulling)],
        new Map(),
        NOW,
      ),
    ).toEqual([]);
  });

  it("notes a plain pull on the pod only once the start is slow", () => {
    // The fixture's start began at 11:59:00 (its in-place state's updateTimestamp).
    const claimedAt = new Date("2026-11-21T11:59:00Z").getTime();
    const pulling = starting({}, { phase: "Running", containerStatuses: [] } as V1Pod["status"]);
    const soon = new Date(claimedAt + SLOW_PULL_MS - 1000);
    expect(planStarting(pool(), [pulling], new Map(), soon)).toEqual([]);
    const slow = new Date(claimedAt + SLOW_PULL_MS + 1000);
    expect(planStarting(pool(), [pulling], new Map(), slow).map((a) => a.why)).toEqual(["diagnose: Pulling"]);
  });

  it("leaves a slow pull's note alone while its create waits, but not a failing pull's", () => {
    const claimedAt = new Date("2026-11-21T11:59:00Z").getTime();
    const slow = new Date(claimedAt + SLOW_PULL_MS + 1000);
    const waited = { [WAITER_UNTIL_ANNOTATION]: new Date(slow.getTime() + 30_000).toISOString() };
    const pulling = starting(waited, { phase: "Running", containerStatuses: [] } as V1Pod["status"]);
    const runs = { leaveToWaiters: true };
    expect(planStarting(pool(), [pulling], new Map(), slow, runs)).toEqual([]);
    // The waiting create itself, or a run once the wait is over, still writes it.
    expect(planStarting(pool(), [pulling], new Map(), slow).map((a) => a.why)).toEqual(["diagnose: Pulling"]);
    const over = new Date(slow.getTime() + 31_000);
    expect(planStarting(pool(), [pulling], new Map(), over, runs).map((a) => a.why)).toEqual([
      "diagnose: Pulling",
    ]);
    const backoff = starting(waited, {
      phase: "Running",
      containerStatuses: [
        {
          name: "main",
          image: "x",
          imageID: "",
          ready: false,
          restartCount: 0,
          state: { waiting: { reason: "ImagePullBackOff", message: "not found" } },
        },
      ],
    } as V1Pod["status"]);
    expect(planStarting(pool(), [backoff], new Map(), slow, runs).map((a) => a.why)).toEqual([
      "diagnose: ImagePullBackOff",
    ]);
  });

  /**
   * resetting is a stopping pod reset since `since` (a sandbox Released), with `extra`
   * annotations; its idle container runs (`back`: a new container on the idle image) or waits
   * (`waiting`: its reason), or neither yet.
   */
  function resetting(
    since: string,
    extra: Record<string, string> = {},
    main: { back?: boolean; waiting?: string } = {},
  ): V1Pod {
    const state = main.waiting
      ? { waiting: { reason: main.waiting, message: "not found" } }
      : main.back
        ? { running: {} }
        : {};
    return pod("r", "stopping", {
      annotations: {
        ...claimed,
        ...extra,
        "agentbox.navix.sh/stop-reason": "Released",
        [STATE]: JSON.stringify({
          phase: "stopping",
          targetImages: { main: "idle:1" },
          targetPodPhase: "idle",
          updateTimestamp: since,
          lastContainerStatuses: { main: { imageID: "agent@sha256:9", containerID: "c2" } },
        }),
      },
      status: {
        phase: "Running",
        containerStatuses: [
          {
            name: "main",
            image: "idle:1",
            imageID: main.back ? "idle@sha256:1" : "",
            ...(main.back ? { containerID: "c3" } : {}),
            ready: main.back === true,
            restartCount: main.back ? 2 : 1,
            state,
          },
        ],
      },
    });
  }

  it("records then idles a stopping pod once the idle image is back", () => {
    const back = resetting("2026-11-21T11:59:00Z", {}, { back: true });
    const [action] = planStopping(pool(), [back], new Map(), NOW);
    expect(action?.record).toMatchObject({ sandboxId: "sbx-1", stopReason: "Released" });
    expect(action?.write.op).toBe("patch");
    // Not before: a reset under way waits for the new container.
    expect(planStopping(pool(), [resetting("2026-11-21T11:59:00Z")], new Map(), NOW)).toEqual([]);
  });

  it("replaces a pod marked for replacement after its record; an Event only when the policy did not ask", () => {
    const marked = resetting("2026-11-21T11:59:59Z", {
      [REPLACE_ON_RESET_ANNOTATION]:
        "containers main cannot be restarted in place (no registry digest to pin)",
    });
    const [replace, ...rest] = planStopping(pool(), [marked], new Map(), NOW);
    expect(rest).toEqual([]);
    expect(replace?.record).toMatchObject({ sandboxId: "sbx-1", stopReason: "Released" });
    expect(replace?.write).toEqual({ op: "delete", uid: "r-uid", resourceVersion: "5" });
    expect(replace?.event).toMatchObject({ type: "Normal", reason: "Replaced" });
    const byPolicy = resetting("2026-11-21T11:59:59Z", { [REPLACE_ON_RESET_ANNOTATION]: REPLACE_BY_POLICY });
    const [quiet] = planStopping(pool(), [byPolicy], new Map(), NOW);
    expect(quiet?.write.op).toBe("delete");
    expect(quiet?.event).toBeUndefined();
  });

  it("a stalled reset is left to recover until the stopping timeout, then recorded and replaced", () => {
    const stalled = resetting("2026-11-21T11:58:00Z", {}, { waiting: "ImagePullBackOff" });
    expect(planStopping(pool(), [stalled], new Map(), NOW)).toEqual([]);
    expect(resetBlocker(stalled, pool(), NOW)).toMatchObject({ reason: "Stalled" });
    const late = new Date(Date.parse("2026-11-21T11:58:00Z") + STOPPING_TIMEOUT_MS + 1000);
    const [timedOut] = planStopping(pool(), [stalled], new Map(), late);
    expect(timedOut?.write.op).toBe("delete");
    expect(timedOut?.record).toMatchObject({ sandboxId: "sbx-1", stopReason: "Released" });
    expect(timedOut?.event).toMatchObject({ type: "Warning", reason: "ResetTimedOut" });
    expect(timedOut?.event?.note).toMatch(/ImagePullBackOff/);
    // A pool whose starts may take longer gives its resets as long.
    const slow = pool({}, { defaultStartupTimeout: "1h" });
    expect(planStopping(slow, [stalled], new Map(), late)).toEqual([]);
    // A reset under way blocks nothing.
    expect(resetBlocker(resetting("2026-11-21T11:59:59Z"), pool(), NOW)).toBeUndefined();
  });

  it("replaces an idle pod whose served containers cannot be restarted; leaves restartable and fresh ones", () => {
    const legacy = { [STATE]: JSON.stringify({ phase: "completed", targetPodPhase: "idle" }) };
    const pinned = `idle@sha256:${"1".repeat(64)}`;
    const stuck = pod("s", "idle", { annotations: legacy, image: pinned });
    const [replace, ...rest] = planServedIdle([
      stuck,
      pod("r", "idle", { annotations: legacy, status: readyWith(`idle@sha256:${"1".repeat(64)}`) }),
      pod("f", "idle", { image: pinned }),
    ]);
    expect(rest).toEqual([]);
    expect(replace?.target.name).toBe("s");
    expect(replace?.write).toEqual({ op: "delete", uid: "s-uid", resourceVersion: "5" });
    expect(replace?.event?.reason).toBe("ResetByReplacement");
  });
});

describe("planMaterialise", () => {
  it("creates missing pods in slots, adds finalizers, and on deletion deletes pods then drops the finalizer", () => {
    const fresh = planMaterialise(
      pool({ finalizers: undefined }, { replicas: 2 }),
      [pod("p-0", "idle", { finalizers: [] })],
      policy,
      NOW,
    );
    expect(fresh.map((a) => a.why)).toEqual([
      "add the pool finalizer",
      // A pod made before rollouts gets its pod revision in the same patch (ADR 0031).
      "add the protection finalizer and the pod-revision label",
      "create pod in slot 1",
    ]);
    const deleting = pool({ deletionTimestamp: "2026-11-21T11:59:00Z" });
    expect(planMaterialise(deleting, [pod("p-0", "idle")], policy, NOW).map((a) => a.write.op)).toEqual([
      "delete",
    ]);
    expect(planMaterialise(deleting, [pod("p-0", "idle", { deleting: true })], policy, NOW)).toEqual([]);
    const [last] = planMaterialise(deleting, [], policy, NOW);
    expect(last?.write).toEqual({
      op: "patch",
      patch: [
        { op: "test", path: "/metadata/resourceVersion", value: "10" },
        { op: "remove", path: "/metadata/finalizers/0" },
      ],
    });
  });

  it("deletes marked idle pods after the window, and leaves status.autoscaling to the autoscaler", () => {
    const labels = { "agentbox.navix.sh/pod-revision": podRevision(pool()) };
    const marked = pod("p-1", "idle", {
      labels,
      annotations: { "agentbox.navix.sh/scale-down-protected": "2026-11-21T11:00:00Z" },
    });
    const actions = planMaterialise(
      pool({}, { replicas: 1 }),
      [pod("p-0", "idle", { labels }), marked],
      policy,
      NOW,
    );
    expect(actions.map((a) => a.why)).toEqual(["scale down: delete marked idle pod"]);
  });
});

describe("planStatus", () => {
  it("writes only a changed status, without the field another writer owns (autoscaling)", () => {
    const [first] = planStatus(
      pool({}, {}, { pendingRequests: 3, autoscaling: { lastScaleDownTime: "2026-11-21T11:00:00Z" } }),
      [pod("p-0", "idle")],
      NOW,
    );
    const written = first?.write.op === "status" ? first.write.status : {};
    expect(written.phase).toBe("Ready");
    expect(written).not.toHaveProperty("autoscaling");
    // No host publishes waiting creates any more: the count goes back to 0.
    expect(written.pendingRequests).toBe(0);
    const stored = pool({}, {}, { ...written, autoscaling: { lastScaleDownTime: "2026-11-21T11:00:00Z" } });
    expect(planStatus(stored, [pod("p-0", "idle")], NOW)).toEqual([]);
  });

  it("removes stale pending-requests marks, testing the value it saw", () => {
    const key = "pending-requests.agentbox.navix.sh/old-host";
    const actions = planStatus(
      pool({ annotations: { [key]: "3 2026-11-21T11:00:00Z" } }),
      [pod("p-0", "idle")],
      NOW,
    );
    const cleanup = actions.find((a) => a.write.op === "patch");
    expect(cleanup?.write).toEqual({
      op: "patch",
      patch: [
        {
          op: "test",
          path: "/metadata/annotations/pending-requests.agentbox.navix.sh~1old-host",
          value: "3 2026-11-21T11:00:00Z",
        },
        { op: "remove", path: "/metadata/annotations/pending-requests.agentbox.navix.sh~1old-host" },
      ],
    });
  });

  it("counts the creates the hosts say are waiting", () => {
    const waiting = pool({
      annotations: { "pending-requests.agentbox.navix.sh/host-a": "2 2026-11-21T11:59:58Z" },
    });
    const [action] = planStatus(waiting, [pod("p-0", "idle")], NOW);
    expect(action?.write.op === "status" && action.write.status.pendingRequests).toBe(2);
  });
});

describe("planIdleRelease", () => {
  const running = (annotations: Record<string, string>) =>
    pod("r", "running", {
      image: "agent:1",
      annotations: {
        ...claimed,
        "agentbox.navix.sh/claimed-at": "2026-11-21T11:00:00Z",
        "agentbox.navix.sh/started-at": "2026-11-21T11:00:05Z",
        ...annotations,
      },
    });

  it("releases a sandbox idle past its timeout, with Released/IdleTimeout", () => {
    const [action] = planIdleRelease(
      [
        running({
          "agentbox.navix.sh/idle-timeout": "600",
          "agentbox.navix.sh/last-active": "2026-11-21T11:49:00Z",
        }),
      ],
      { idleImages: { main: "idle:1" } },
      NOW,
    );
    expect(action?.why).toBe("release idle sandbox: idle for 660 s (idle timeout 600 s)");
    const patch = action?.write.op === "patch" ? action.write.patch : [];
    expect(patch).toContainEqual({
      op: "add",
      path: "/metadata/annotations/agentbox.navix.sh~1failure-reason",
      value: "IdleTimeout",
    });
    expect(patch).toContainEqual({
      op: "add",
      path: "/metadata/annotations/agentbox.navix.sh~1stop-reason",
      value: "Released",
    });
  });

  it("keeps sandboxes that were active recently, have no timeout, or are not running", () => {
    expect(
      planIdleRelease(
        [
          running({
            "agentbox.navix.sh/idle-timeout": "600",
            "agentbox.navix.sh/last-active": "2026-11-21T11:55:00Z",
          }),
        ],
        { idleImages: { main: "idle:1" } },
        NOW,
      ),
    ).toEqual([]);
    expect(planIdleRelease([running({})], { idleImages: { main: "idle:1" } }, NOW)).toEqual([]);
    expect(
      planIdleRelease(
        [pod("s", "starting", { annotations: { "agentbox.navix.sh/idle-timeout": "1" } })],
        { idleImages: { main: "idle:1" } },
        NOW,
      ),
    ).toEqual([]);
    // Without a last-active report, the start time counts.
    expect(
      planIdleRelease(
        [running({ "agentbox.navix.sh/idle-timeout": "3600" })],
        { idleImages: { main: "idle:1" } },
        NOW,
      ),
    ).toEqual([]);
  });
});

describe("reportedOnly (idle-release mode reported)", () => {
  const sandbox = (name: string, annotations: Record<string, string>): V1Pod => {
    const p = pod(name, "running", {
      image: "agent:1",
      annotations: { ...claimed, "agentbox.navix.sh/idle-timeout": "600", ...annotations },
    });
    return p;
  };

  it("keeps only running sandboxes with reported activity, and counts the silent ones past their timeout", () => {
    const reported = sandbox("reported", { "agentbox.navix.sh/last-active": "2026-11-21T11:49:00Z" });
    const silentOld = sandbox("silent-old", { "agentbox.navix.sh/started-at": "2026-11-21T11:00:00Z" });
    const silentNew = sandbox("silent-new", { "agentbox.navix.sh/started-at": "2026-11-21T11:59:30Z" });
    // The start writes last-active too: equal to the start, it is no reported activity.
    const startedOnly = sandbox("started-only", {
      "agentbox.navix.sh/started-at": "2026-11-21T11:00:00Z",
      "agentbox.navix.sh/last-active": "2026-11-21T11:00:00Z",
    });
    const idle = pod("idle", "idle");
    const kept = reportedOnly([reported, silentOld, silentNew, startedOnly, idle], NOW);
    expect(kept.pods.map((p) => p.metadata?.name)).toEqual(["reported", "idle"]);
    expect(kept.unreported).toBe(2);
    // The reported one is still released on its own activity; the silent ones never are.
    expect(
      planIdleRelease(kept.pods, { idleImages: { main: "idle:1" } }, NOW).map((a) => a.target.name),
    ).toEqual(["reported"]);
    expect(planIdleRelease([silentOld], { idleImages: { main: "idle:1" } }, NOW)).toHaveLength(1); // since-start would
  });
});
