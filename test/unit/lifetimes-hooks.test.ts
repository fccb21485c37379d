import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { sandboxView } from "../../lib/claims/sandbox-view.ts";
import { endAtAfter, timeoutChange, timeoutPatch } from "../../lib/claims/timeouts.ts";
import { claimIntent } from "../../lib/lifecycle/claim-intent.ts";
import { completeStartingIntent } from "../../lib/lifecycle/complete-intent.ts";
import { hasPendingHooks, readHooks } from "../../lib/lifecycle/post-start-hooks.ts";
import { LIFETIME_FAILURE_REASON, planLifetimeRelease } from "../../lib/reconcile/lifetime-release.ts";
import { HOOK_FAILURE_REASON, planHookOutcome } from "../../lib/reconcile/post-start-hooks.ts";

// Lifetimes (end-at), timeout changes and post-start hook outcomes, on plain pods with a fixed clock.

const NOW = new Date("2026-11-21T12:00:00Z");
const HOOKS = "agentbox.navix.sh/post-start-hooks";
const END_AT = "agentbox.navix.sh/end-at";
const IDLE = { idleImages: { main: "idle:1" } };

function running(
  annotations: Record<string, string>,
  over: { phase?: string; deleting?: boolean } = {},
): V1Pod {
  return {
    metadata: {
      name: "p-0",
      namespace: "ns",
      uid: "u",
      resourceVersion: "7",
      labels: {
        "agentbox.navix.sh/sandbox-pool": "p",
        "agentbox.navix.sh/sandbox-phase": over.phase ?? "running",
        "agentbox.navix.sh/sandbox-id": "sbx-1",
      },
      annotations: {
        "agentbox.navix.sh/sandbox-id": "sbx-1",
        "agentbox.navix.sh/claimed-at": "2026-11-21T11:00:00Z",
        "agentbox.navix.sh/started-at": "2026-11-21T11:59:50Z",
        ...annotations,
      },
      ...(over.deleting ? { deletionTimestamp: new Date("2026-11-21T11:59:00Z") } : {}),
    },
    spec: { containers: [{ name: "main", image: "agent:1" }] },
    status: {
      phase: "Running",
      podIP: "127.32.0.9",
      containerStatuses: [
        {
          name: "main",
          image: "agent:1",
          imageID: "a@sha256:1",
          containerID: "c2",
          ready: true,
          restartCount: 0,
        },
      ],
    },
  } as V1Pod;
}

describe("planLifetimeRelease", () => {
  it("releases a running sandbox whose end-at passed, with Released/LifetimeExpired", () => {
    const [action, ...rest] = planLifetimeRelease(
      [
        running({
          [END_AT]: "2026-11-21T11:59:59Z",
          "agentbox.navix.sh/last-active": "2026-11-21T12:00:00Z",
        }),
      ],
      IDLE,
      NOW,
    );
    expect(rest).toEqual([]);
    expect(action?.event?.reason).toBe(LIFETIME_FAILURE_REASON);
    const patch = JSON.stringify(action?.write);
    expect(patch).toContain('"value":"stopping"');
    expect(patch).toContain("Released");
    expect(patch).toContain(LIFETIME_FAILURE_REASON);
  });

  it.each([
    ["end-at still ahead", running({ [END_AT]: "2026-11-21T12:00:01Z" })],
    ["no end-at", running({})],
    ["garbled end-at", running({ [END_AT]: "soon" })],
    [
      "starting (the startup timeout's business)",
      running({ [END_AT]: "2026-11-21T11:00:00Z" }, { phase: "starting" }),
    ],
    ["being deleted", running({ [END_AT]: "2026-11-21T11:00:00Z" }, { deleting: true })],
  ])("leaves a sandbox alone: %s", (_, pod) => {
    expect(planLifetimeRelease([pod], IDLE, NOW)).toEqual([]);
  });
});

describe("a lifetime counts from the start", () => {
  it("claim writes end-at = claim + lifetime and keeps the lifetime; Running moves end-at to start + lifetime", () => {
    const idle = running({}, { phase: "idle" });
    if (idle.metadata) idle.metadata.annotations = {};
    const claim = claimIntent(
      idle,
      { sandboxId: "sbx-2", containerImages: { main: "agent:2" }, lifetimeSeconds: 60 },
      NOW,
    );
    expect(claim.ok && claim.intent.setAnnotations).toMatchObject({
      "agentbox.navix.sh/lifetime": "60",
      [END_AT]: "2026-11-21T12:01:00Z",
    });
    const starting = running(
      { "agentbox.navix.sh/lifetime": "60", [END_AT]: "2026-11-21T12:01:00Z" },
      { phase: "starting" },
    );
    if (starting.metadata?.annotations)
      starting.metadata.annotations["agentbox.navix.sh/inplace-update-state"] = JSON.stringify({
        phase: "starting",
        targetImages: { main: "agent:1" },
        targetPodPhase: "running",
        updateTimestamp: "2026-11-21T11:59:50Z",
        lastContainerStatuses: { main: { containerID: "c1" } },
      });
    const later = new Date("2026-11-21T12:00:40Z");
    const done = completeStartingIntent(starting, later);
    expect(done.ok && done.intent.setAnnotations[END_AT]).toBe("2026-11-21T12:01:40Z");
    expect(done.ok && done.intent.removeAnnotations).toEqual(["agentbox.navix.sh/lifetime"]);
  });

  it("an explicit timeout wins over a lifetime still waiting for the start", () => {
    const patch = timeoutPatch(
      running({ "agentbox.navix.sh/lifetime": "60" }, { phase: "starting" }),
      "sbx-1",
      { lifetime: { seconds: 10, mode: "set" } },
      NOW,
    );
    expect(patch.at(-1)).toEqual({ op: "remove", path: "/metadata/annotations/agentbox.navix.sh~1lifetime" });
  });
});

describe("timeoutPatch and endAtAfter", () => {
  it("sets end-at to now + seconds, testing the version and the sandbox id", () => {
    expect(timeoutPatch(running({}), "sbx-1", { lifetime: { seconds: 60, mode: "set" } }, NOW)).toEqual([
      { op: "test", path: "/metadata/resourceVersion", value: "7" },
      { op: "test", path: "/metadata/labels/agentbox.navix.sh~1sandbox-id", value: "sbx-1" },
      { op: "add", path: "/metadata/annotations/agentbox.navix.sh~1end-at", value: "2026-11-21T12:01:00Z" },
    ]);
  });

  it("a set may shorten the lifetime; an extension never does, and keeps an unlimited one unlimited", () => {
    expect(endAtAfter("2026-11-21T13:00:00Z", { seconds: 10, mode: "set" }, NOW)).toBe(
      "2026-11-21T12:00:10Z",
    );
    expect(endAtAfter("2026-11-21T13:00:00Z", { seconds: 10, mode: "extend" }, NOW)).toBe(
      "2026-11-21T13:00:00Z",
    );
    expect(endAtAfter("2026-11-21T12:00:05Z", { seconds: 10, mode: "extend" }, NOW)).toBe(
      "2026-11-21T12:00:10Z",
    );
    expect(endAtAfter(undefined, { seconds: 10, mode: "extend" }, NOW)).toBeUndefined();
  });

  it("reads the timeout call: timeout sets the lifetime from now, idleTimeout the idle timeout", () => {
    expect(timeoutChange({ timeout: 60 })).toEqual({ lifetime: { seconds: 60, mode: "set" } });
    expect(timeoutChange({ idleTimeout: 0 })).toEqual({ idleTimeout: 0 });
  });

  it("writes nothing when nothing changes, and removes the idle timeout for 0", () => {
    const pod = running({ "agentbox.navix.sh/idle-timeout": "60", [END_AT]: "2026-11-21T13:00:00Z" });
    expect(
      timeoutPatch(pod, "sbx-1", { idleTimeout: 60, lifetime: { seconds: 5, mode: "extend" } }, NOW),
    ).toEqual([]);
    expect(timeoutPatch(pod, "sbx-1", { idleTimeout: 0 }, NOW).at(-1)).toEqual({
      op: "remove",
      path: "/metadata/annotations/agentbox.navix.sh~1idle-timeout",
    });
  });
});

describe("post-start hooks", () => {
  const hooks = JSON.stringify([{ type: "EnvdInit", port: 49983, sealedEnvVars: "v1.abc" }]);

  it("reads known hooks and refuses unknown or garbled ones", () => {
    expect(readHooks(running({ [HOOKS]: hooks }))).toEqual({
      ok: true,
      hooks: [{ type: "EnvdInit", port: 49983, sealedEnvVars: "v1.abc" }],
    });
    expect(readHooks(running({}))).toEqual({ ok: true, hooks: [] });
    expect(readHooks(running({ [HOOKS]: '[{"type":"Exec"}]' })).ok).toBe(false);
    expect(readHooks(running({ [HOOKS]: "{" })).ok).toBe(false);
  });

  it("are pending on a running pod only, and make it show as starting until done", () => {
    expect(hasPendingHooks(running({ [HOOKS]: hooks }))).toBe(true);
    expect(hasPendingHooks(running({ [HOOKS]: hooks }, { phase: "starting" }))).toBe(false);
    expect(hasPendingHooks(running({ [HOOKS]: hooks }, { deleting: true }))).toBe(false);
    expect(sandboxView(running({ [HOOKS]: hooks }), NOW)).toMatchObject({
      phase: "starting",
      detail: { reason: "PostStartHooks" },
    });
    expect(sandboxView(running({}), NOW)?.phase).toBe("running");
  });

  it("success removes exactly these hooks (tested value and sandbox id)", () => {
    const [action] = planHookOutcome(running({ [HOOKS]: hooks }), { ok: true }, IDLE, 60, NOW);
    expect(action?.write).toEqual({
      op: "patch",
      patch: [
        { op: "test", path: "/metadata/labels/agentbox.navix.sh~1sandbox-id", value: "sbx-1" },
        { op: "test", path: "/metadata/annotations/agentbox.navix.sh~1post-start-hooks", value: hooks },
        { op: "remove", path: "/metadata/annotations/agentbox.navix.sh~1post-start-hooks" },
      ],
    });
  });

  it("a failure is retried until the deadline, then releases the sandbox as Failed with the error", () => {
    const failing = running({ [HOOKS]: hooks });
    expect(planHookOutcome(failing, { ok: false, error: "refused" }, IDLE, 60, NOW)).toEqual([]);
    const [action] = planHookOutcome(failing, { ok: false, error: "POST answered 500" }, IDLE, 5, NOW);
    expect(action?.event).toMatchObject({ type: "Warning", reason: HOOK_FAILURE_REASON });
    const patch = JSON.stringify(action?.write);
    expect(patch).toContain('"value":"stopping"');
    expect(patch).toContain("Failed");
    expect(patch).toContain("post-start hook failed: POST answered 500");
  });
});
