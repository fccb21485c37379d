import type { V1ContainerStatus, V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import {
  CLAIMED_AT_ANNOTATION,
  CLAIMED_BY_LABEL,
  CONTAINER_ID_ANNOTATION,
  EGRESS_LABEL,
  EXIT_CODE_ANNOTATION,
  FAILURE_MESSAGE_ANNOTATION,
  FAILURE_REASON_ANNOTATION,
  IDLE_TIMEOUT_ANNOTATION,
  INPLACE_UPDATE_STATE_ANNOTATION,
  LAST_ACTIVE_ANNOTATION,
  MANAGED_ANNOTATION_KEYS_ANNOTATION,
  MANAGED_BY_LABEL,
  MANAGED_LABEL_KEYS_ANNOTATION,
  POST_START_HOOKS_ANNOTATION,
  REPLACE_ON_RESET_ANNOTATION,
  RUNNING_IMAGES_ANNOTATION,
  SANDBOX_ID_ANNOTATION,
  SANDBOX_ID_LABEL,
  SANDBOX_METADATA_ANNOTATION,
  SANDBOX_PHASE,
  SANDBOX_PHASE_LABEL,
  SANDBOX_POOL_LABEL,
  SANDBOX_STATUS_DETAIL_ANNOTATION,
  type SandboxPhase,
  SCALE_DOWN_PROTECTED_ANNOTATION,
  STARTED_AT_ANNOTATION,
  STARTUP_TIMEOUT_ANNOTATION,
  STOP_REASON_ANNOTATION,
  TEAM_LABEL,
  TERMINATED_AT_ANNOTATION,
  USER_LABEL,
} from "../../lib/crd/keys.ts";
import { hasUnexpectedRestart, isUpdateComplete } from "../../lib/lifecycle/completion.ts";
import { readInplaceState } from "../../lib/lifecycle/inplace-state.ts";
import { REPLACE_BY_POLICY } from "../../lib/lifecycle/release-intent.ts";
import { servedContainers } from "../../lib/lifecycle/served-containers.ts";
import { captureStopRecord } from "../../lib/lifecycle/stop-record.ts";
import {
  type ClaimOptions,
  claimIntent,
  completeStartingIntent,
  completeStoppingIntent,
  failIntent,
  type IntentResult,
  isLegalTransition,
  type JsonPatchOperation,
  PHASE_TRANSITIONS,
  type PodIntent,
  releaseIntent,
  toJsonPatch,
  transitionTrigger,
} from "../../lib/lifecycle/transitions.ts";
import { jsonEqual } from "../../lib/util/deep-equal.ts";

const NOW = new Date("2026-05-10T12:00:00.123Z");
const AT = "2026-05-10T12:00:00Z";
const IDLE_IMAGE = "registry.example/idle:1";
const APP_IMAGE = "registry.example/app:2";
const NO_DIGESTS: ReadonlyMap<string, string> = new Map();
const PROXY_PINNED = `proxy:1@sha256:${"2".repeat(64)}`;

/** status is a running container; its imageID names the reference's own digest when it pins one. */
const status = (name: string, image: string, n: number, restartCount = 0): V1ContainerStatus => ({
  name,
  image,
  imageID: image.includes("@")
    ? image.replace(/:[^/:@]+@/, "@")
    : `${image.replace(/:[^/:]+$/, "")}@sha256:${String(n).repeat(64)}`,
  containerID: `containerd://${name}-${n}`,
  restartCount,
  ready: true,
  started: true,
  state: { running: { startedAt: new Date("2026-05-10T10:00:00Z") } },
});

function idlePod(): V1Pod {
  return {
    metadata: {
      name: "pool-a-x1",
      namespace: "ns",
      uid: "uid-1",
      resourceVersion: "100",
      creationTimestamp: new Date("2026-05-10T10:00:00Z"),
      labels: { [SANDBOX_POOL_LABEL]: "pool-a", [SANDBOX_PHASE_LABEL]: "idle", app: "sandbox" },
      annotations: { [SCALE_DOWN_PROTECTED_ANNOTATION]: "2026-05-10T11:00:00Z", "keep/me": "yes" },
    },
    spec: {
      containers: [
        { name: "main", image: IDLE_IMAGE, resources: { requests: { cpu: "500m", memory: "512Mi" } } },
        { name: "proxy", image: "proxy:1", resources: { limits: { cpu: "100m", memory: "64Mi" } } },
      ],
    },
    status: {
      phase: "Running",
      containerStatuses: [status("main", IDLE_IMAGE, 1), status("proxy", "proxy:1", 2)],
    },
  };
}

const claim: ClaimOptions = {
  sandboxId: "sb-123",
  containerImages: { main: APP_IMAGE },
  team: "t1",
  user: "u1",
  labels: { "example.com/tier": "gold", [TEAM_LABEL]: "ignored-in-managed-keys" },
  annotations: { "example.com/note": "hi" },
  idleTimeoutSeconds: 600,
  startupTimeoutSeconds: 120.9,
  metadata: { purpose: "test" },
  postStartHooks: [{ type: "http", path: "/init" }],
  claimedBy: "host-1",
};

function ok(result: IntentResult): PodIntent {
  if (!result.ok) throw new Error(`expected an intent, got: ${result.reason}`);
  return result.intent;
}

function unescapePointer(token: string): string {
  return token.replaceAll("~1", "/").replaceAll("~0", "~");
}

/** apply is a small RFC 6902 applier with the apiserver's all-or-nothing semantics. */
function apply(pod: V1Pod, ops: JsonPatchOperation[]): V1Pod {
  const doc = structuredClone(pod) as unknown as Record<string, unknown>;
  for (const op of ops) {
    const tokens = op.path.split("/").slice(1).map(unescapePointer);
    const last = tokens.pop() as string;
    let parent = doc as Record<string, unknown>;
    for (const t of tokens) {
      parent = parent[t] as Record<string, unknown>;
      if (parent === undefined) throw new Error(`${op.op} ${op.path}: parent missing`);
    }
    if (op.op === "test") {
      if (!jsonEqual(parent[last], op.value)) throw new Error(`test ${op.path} failed`);
    } else if (op.op === "remove" || op.op === "replace") {
      if (!(last in parent)) throw new Error(`${op.op} ${op.path}: missing`);
      if (op.op === "remove") delete parent[last];
      else parent[last] = op.value;
    } else parent[last] = op.value;
  }
  const out = doc as unknown as V1Pod;
  out.metadata = { ...out.metadata, resourceVersion: String(Number(pod.metadata?.resourceVersion) + 1) };
  return out;
}

/**
 * kubelet swaps every container whose spec image differs from its status (or only those named in
 * `only`), with new ids.
 */
function kubelet(pod: V1Pod, n: number, only?: string[]): V1Pod {
  const out = structuredClone(pod);
  out.status = {
    ...out.status,
    containerStatuses: (out.status?.containerStatuses ?? []).map((s) => {
      const image = out.spec?.containers.find((c) => c.name === s.name)?.image ?? s.image;
      const swap = image !== s.image && (only === undefined || only.includes(s.name));
      return swap ? status(s.name, image, n, s.restartCount + 1) : s;
    }),
  };
  out.metadata = { ...out.metadata, resourceVersion: String(Number(pod.metadata?.resourceVersion) + 1) };
  return out;
}

const state = (pod: V1Pod) => readInplaceState(pod).state;

describe("phase machine", () => {
  const phases = Object.values(SANDBOX_PHASE);
  const legal = new Set([
    "idle>starting",
    "idle>running",
    "starting>running",
    "starting>stopping",
    "running>stopping",
    "stopping>idle",
    "idle>failed",
    "starting>failed",
    "running>failed",
    "stopping>failed",
  ]);
  it.each(phases.flatMap((from) => phases.map((to) => [from, to] as [SandboxPhase, SandboxPhase])))(
    "%s → %s",
    (from, to) => {
      expect(isLegalTransition(from, to)).toBe(legal.has(`${from}>${to}`));
    },
  );

  it("names the trigger of each edge", () => {
    expect(transitionTrigger("idle", "starting")).toBe("claim");
    expect(transitionTrigger("starting", "running")).toBe("complete");
    expect(transitionTrigger("running", "stopping")).toBe("release");
    expect(transitionTrigger("stopping", "idle")).toBe("complete");
    expect(transitionTrigger("running", "failed")).toBe("fail");
    expect(transitionTrigger("failed", "idle")).toBeUndefined();
    expect(PHASE_TRANSITIONS).toHaveLength(legal.size);
  });
});

describe("claimIntent", () => {
  it("idle → starting: images, identity, owner, timeouts, metadata, managed keys, state", () => {
    const intent = ok(claimIntent(idlePod(), claim, NOW));
    expect(intent.expectPhase).toBe("idle");
    expect(intent.containerImages).toEqual({ main: APP_IMAGE });
    expect(intent.setLabels).toEqual({
      "example.com/tier": "gold",
      [SANDBOX_ID_LABEL]: "sb-123",
      [MANAGED_BY_LABEL]: "sandbox-api-server",
      [TEAM_LABEL]: "t1",
      [USER_LABEL]: "u1",
      [CLAIMED_BY_LABEL]: "host-1",
      [SANDBOX_PHASE_LABEL]: "starting",
    });
    // A leftover egress label (issue #38) never survives a claim that sets none.
    expect(intent.removeLabels).toEqual([EGRESS_LABEL]);
    const { [INPLACE_UPDATE_STATE_ANNOTATION]: rawState, ...annotations } = intent.setAnnotations;
    expect(annotations).toEqual({
      "example.com/note": "hi",
      [SANDBOX_ID_ANNOTATION]: "sb-123",
      [CLAIMED_AT_ANNOTATION]: AT,
      [IDLE_TIMEOUT_ANNOTATION]: "600",
      [STARTUP_TIMEOUT_ANNOTATION]: "120",
      [SANDBOX_METADATA_ANNOTATION]: '{"purpose":"test"}',
      [POST_START_HOOKS_ANNOTATION]: '[{"type":"http","path":"/init"}]',
      [MANAGED_LABEL_KEYS_ANNOTATION]: '["example.com/tier"]',
      [MANAGED_ANNOTATION_KEYS_ANNOTATION]: '["example.com/note"]',
    });
    expect(JSON.parse(rawState ?? "")).toEqual({
      phase: "starting",
      targetImage: APP_IMAGE,
      targetImages: { main: APP_IMAGE },
      targetPodPhase: "running",
      updateTimestamp: AT,
      lastContainerStatuses: {
        main: {
          imageID: `registry.example/idle@sha256:${"1".repeat(64)}`,
          containerID: "containerd://main-1",
        },
      },
    });
    expect(intent.removeAnnotations).toContain(SCALE_DOWN_PROTECTED_ANNOTATION);
    expect(intent.removeAnnotations).toContain(STARTED_AT_ANNOTATION);
    expect(intent.removeAnnotations).not.toContain(SANDBOX_ID_ANNOTATION);
  });

  it("writes no timeouts, metadata or hooks that are absent, zero or negative; removes leftovers", () => {
    const pod = idlePod();
    pod.metadata!.labels![TEAM_LABEL] = "previous";
    pod.metadata!.annotations![LAST_ACTIVE_ANNOTATION] = "2026-05-01T00:00:00Z";
    const intent = ok(
      claimIntent(
        pod,
        {
          sandboxId: "s",
          containerImages: { main: APP_IMAGE },
          idleTimeoutSeconds: 0,
          startupTimeoutSeconds: -5,
        },
        NOW,
      ),
    );
    for (const key of [
      IDLE_TIMEOUT_ANNOTATION,
      STARTUP_TIMEOUT_ANNOTATION,
      SANDBOX_METADATA_ANNOTATION,
      POST_START_HOOKS_ANNOTATION,
    ])
      expect(intent.setAnnotations).not.toHaveProperty(key);
    expect(intent.setAnnotations[MANAGED_LABEL_KEYS_ANNOTATION]).toBe("[]");
    expect(intent.removeLabels).toEqual([TEAM_LABEL, USER_LABEL, CLAIMED_BY_LABEL, EGRESS_LABEL]);
    expect(intent.removeAnnotations).toContain(LAST_ACTIVE_ANNOTATION);
    const patched = apply(pod, toJsonPatch(pod, intent));
    expect(patched.metadata?.labels).not.toHaveProperty(TEAM_LABEL);
    expect(patched.metadata?.annotations).not.toHaveProperty(LAST_ACTIVE_ANNOTATION);
    expect(patched.metadata?.annotations).not.toHaveProperty(SCALE_DOWN_PROTECTED_ANNOTATION);
    expect(patched.metadata?.annotations?.["keep/me"]).toBe("yes");
  });

  it("writes claimed-by only when given, and refuses one that is not a label value", () => {
    const without = ok(claimIntent(idlePod(), { sandboxId: "s", containerImages: { main: APP_IMAGE } }, NOW));
    expect(without.setLabels).not.toHaveProperty(CLAIMED_BY_LABEL);
    for (const bad of ["", "host one", "x".repeat(64)]) {
      const refused = claimIntent(idlePod(), { ...claim, claimedBy: bad }, NOW);
      expect(refused.ok === false && refused.reason).toMatch(/claimed-by .* is not a valid label value/);
    }
    // A pod an older host returned to idle with a claimed-by of another host: the claim replaces it.
    const stale = idlePod();
    stale.metadata!.labels![CLAIMED_BY_LABEL] = "host-0";
    const claimed = apply(stale, toJsonPatch(stale, ok(claimIntent(stale, claim, NOW))));
    expect(claimed.metadata?.labels?.[CLAIMED_BY_LABEL]).toBe("host-1");
  });

  it("same images (after normalising): straight to running with a completed state, no image change", () => {
    const pod = idlePod();
    pod.spec!.containers[0]!.image = "nginx";
    pod.status!.containerStatuses![0] = status("main", "docker.io/library/nginx:latest", 7);
    const intent = ok(
      claimIntent(pod, { sandboxId: "s", containerImages: { main: "docker.io/library/nginx:latest" } }, NOW),
    );
    expect(intent.setLabels[SANDBOX_PHASE_LABEL]).toBe("running");
    expect(isLegalTransition(intent.expectPhase, "running")).toBe(true);
    expect(intent.containerImages).toEqual({});
    expect(intent.setAnnotations[STARTED_AT_ANNOTATION]).toBe(AT);
    expect(intent.setAnnotations[LAST_ACTIVE_ANNOTATION]).toBe(AT);
    expect(JSON.parse(intent.setAnnotations[INPLACE_UPDATE_STATE_ANNOTATION] ?? "")).toEqual({
      phase: "completed",
      targetPodPhase: "running",
      updateTimestamp: AT,
      stableContainerStatuses: { main: { containerID: "containerd://main-7", restartCount: 0 } },
    });
  });

  const deleting = idlePod();
  deleting.metadata!.deletionTimestamp = new Date(AT);
  const notRunning = idlePod();
  notRunning.status!.phase = "Pending";
  const running = idlePod();
  running.metadata!.labels![SANDBOX_PHASE_LABEL] = "running";
  it.each<[string, V1Pod, Partial<ClaimOptions>, RegExp]>([
    ["pod not idle", running, {}, /running, not idle/],
    ["pod being deleted", deleting, {}, /deleted/],
    ["empty sandbox id", idlePod(), { sandboxId: "" }, /not a valid label value/],
    ["sandbox id not a label value", idlePod(), { sandboxId: "a/b" }, /not a valid label value/],
    ["sandbox id too long", idlePod(), { sandboxId: "a".repeat(64) }, /not a valid label value/],
    ["reserved caller label", idlePod(), { labels: { [SANDBOX_POOL_LABEL]: "other" } }, /reserved/],
    [
      "reserved caller annotation",
      idlePod(),
      { annotations: { [INPLACE_UPDATE_STATE_ANNOTATION]: "{}" } },
      /reserved/,
    ],
    ["no images", idlePod(), { containerImages: {} }, /target image is required/],
    ["empty image", idlePod(), { containerImages: { main: "" } }, /target image is required/],
    ["unknown container", idlePod(), { containerImages: { nope: "x:1" } }, /"nope" not found/],
    ["same image but pod not Running", notRunning, { containerImages: { main: IDLE_IMAGE } }, /not Running/],
  ])("refuses: %s", (_name, pod, over, reason) => {
    const result = claimIntent(pod, { ...claim, ...over }, NOW);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toMatch(reason);
  });
});

describe("toJsonPatch", () => {
  const pod = idlePod();
  const intent: PodIntent = {
    expectPhase: "idle",
    setLabels: { [SANDBOX_PHASE_LABEL]: "starting", app: "sandbox", "new/label": "v" },
    removeLabels: ["absent", SANDBOX_POOL_LABEL, "new/label"],
    setAnnotations: { "keep/me": "changed", "a~b/c": "x" },
    removeAnnotations: [SCALE_DOWN_PROTECTED_ANNOTATION, "not-there"],
    containerImages: { proxy: "proxy:2", main: IDLE_IMAGE },
  };
  const ops = toJsonPatch(pod, intent);

  it("starts with the resourceVersion test, then the phase label test", () => {
    expect(ops.slice(0, 2)).toEqual([
      { op: "test", path: "/metadata/resourceVersion", value: "100" },
      { op: "test", path: "/metadata/labels/agentbox.navix.sh~1sandbox-phase", value: "idle" },
    ]);
  });

  it("escapes keys, removes only existing keys, adds or replaces, skips unchanged values, images by index", () => {
    expect(ops.slice(2)).toEqual([
      { op: "remove", path: "/metadata/labels/agentbox.navix.sh~1sandbox-pool" },
      { op: "replace", path: "/metadata/labels/agentbox.navix.sh~1sandbox-phase", value: "starting" },
      { op: "add", path: "/metadata/labels/new~1label", value: "v" },
      { op: "remove", path: "/metadata/annotations/agentbox.navix.sh~1scale-down-protected" },
      { op: "replace", path: "/metadata/annotations/keep~1me", value: "changed" },
      { op: "add", path: "/metadata/annotations/a~0b~1c", value: "x" },
      { op: "replace", path: "/spec/containers/1/image", value: "proxy:2" },
    ]);
    const patched = apply(pod, ops);
    expect(patched.metadata?.annotations?.["a~b/c"]).toBe("x");
    expect(patched.spec?.containers[1]?.image).toBe("proxy:2");
  });

  it("adds a missing annotations map whole", () => {
    const bare = idlePod();
    delete bare.metadata!.annotations;
    expect(
      toJsonPatch(bare, { ...intent, removeAnnotations: ["x"] }).filter((o) =>
        o.path.startsWith("/metadata/annotations"),
      ),
    ).toEqual([{ op: "add", path: "/metadata/annotations", value: { "keep/me": "changed", "a~b/c": "x" } }]);
  });

  it("throws without a resourceVersion or for an unknown container", () => {
    const noVersion = idlePod();
    delete noVersion.metadata!.resourceVersion;
    expect(() => toJsonPatch(noVersion, intent)).toThrow(/resourceVersion/);
    expect(() => toJsonPatch(pod, { ...intent, containerImages: { ghost: "x" } })).toThrow(/ghost/);
  });

  it("a stale or repeated patch fails its preconditions", () => {
    const claimOps = toJsonPatch(pod, ok(claimIntent(pod, claim, NOW)));
    const claimed = apply(pod, claimOps);
    expect(() => apply(claimed, claimOps)).toThrow(/resourceVersion/);
    const sameVersion = { ...claimed, metadata: { ...claimed.metadata, resourceVersion: "100" } };
    expect(() => apply(sameVersion, claimOps)).toThrow(/sandbox-phase/);
  });
});

describe("a whole lifecycle through patches", () => {
  it("idle → starting → running → stopping → idle leaves the pod as it was", () => {
    const idle = idlePod();
    const claimed = apply(idle, toJsonPatch(idle, ok(claimIntent(idle, claim, NOW))));
    expect(claimed.metadata?.labels?.[SANDBOX_PHASE_LABEL]).toBe("starting");
    expect(claimed.metadata?.labels?.[CLAIMED_BY_LABEL]).toBe("host-1");
    expect(claimed.spec?.containers[0]?.image).toBe(APP_IMAGE);
    expect(isUpdateComplete(claimed, state(claimed)!, NO_DIGESTS)).toBe(false);
    expect(ok(completeStartingIntent(claimed, NOW)).expectPhase).toBe("starting");

    const pulled = kubelet(claimed, 3);
    expect(isUpdateComplete(pulled, state(pulled)!, NO_DIGESTS)).toBe(true);
    const startIntent = ok(completeStartingIntent(pulled, NOW));
    const running = apply(pulled, toJsonPatch(pulled, startIntent));
    expect(running.metadata?.labels?.[SANDBOX_PHASE_LABEL]).toBe("running");
    expect(running.metadata?.annotations?.[STARTED_AT_ANNOTATION]).toBe(AT);
    expect(running.metadata?.annotations?.[LAST_ACTIVE_ANNOTATION]).toBe(AT);
    expect(state(running)).toEqual({
      phase: "completed",
      targetImage: APP_IMAGE,
      targetImages: { main: APP_IMAGE },
      targetPodPhase: "running",
      updateTimestamp: AT,
      stableContainerStatuses: { main: { containerID: "containerd://main-3", restartCount: 1 } },
    });
    expect(hasUnexpectedRestart(running, state(running)!)).toBe(false);
    expect(completeStartingIntent(running, NOW)).toEqual({
      ok: false,
      reason: "pod is running, not starting",
    });

    const releaseAt = new Date("2026-05-10T13:00:00Z");
    const release = ok(
      releaseIntent(running, { idleImages: { main: IDLE_IMAGE, proxy: "proxy:1" } }, releaseAt),
    );
    expect(release.expectPhase).toBe("running");
    // The sidecar served the sandbox too: it is restarted on its own image, pinned to its digest.
    expect(release.containerImages).toEqual({ main: IDLE_IMAGE, proxy: PROXY_PINNED });
    const stopping = apply(running, toJsonPatch(running, release));
    const annotations = stopping.metadata?.annotations ?? {};
    expect(stopping.metadata?.labels?.[SANDBOX_PHASE_LABEL]).toBe("stopping");
    expect(annotations[STOP_REASON_ANNOTATION]).toBe("Completed");
    expect(annotations[TERMINATED_AT_ANNOTATION]).toBe("2026-05-10T13:00:00Z");
    expect(annotations[RUNNING_IMAGES_ANNOTATION]).toBe(`{"main":"${APP_IMAGE}","proxy":"proxy:1"}`);
    expect(annotations[CONTAINER_ID_ANNOTATION]).toBe("containerd://main-3");
    for (const key of [
      IDLE_TIMEOUT_ANNOTATION,
      LAST_ACTIVE_ANNOTATION,
      MANAGED_LABEL_KEYS_ANNOTATION,
      "example.com/note",
    ])
      expect(annotations).not.toHaveProperty(key);
    expect(stopping.metadata?.labels).not.toHaveProperty("example.com/tier");
    expect(stopping.metadata?.labels).not.toHaveProperty(MANAGED_BY_LABEL);
    expect(stopping.metadata?.labels).not.toHaveProperty(CLAIMED_BY_LABEL);
    expect(stopping.metadata?.labels?.[TEAM_LABEL]).toBe("t1");
    expect(state(stopping)).toMatchObject({
      phase: "stopping",
      targetImages: { main: IDLE_IMAGE, proxy: PROXY_PINNED },
      targetPodPhase: "idle",
      lastContainerStatuses: {
        main: { containerID: "containerd://main-3" },
        proxy: { containerID: "containerd://proxy-2" },
      },
    });
    // Until the sidecar too runs in a new container, the pod is not idle.
    const mainOnly = kubelet(stopping, 4, ["main"]);
    expect(isUpdateComplete(mainOnly, state(mainOnly)!, NO_DIGESTS)).toBe(false);

    const reset = kubelet(stopping, 4);
    expect(isUpdateComplete(stopping, state(stopping)!, NO_DIGESTS)).toBe(false);
    expect(isUpdateComplete(reset, state(reset)!, NO_DIGESTS)).toBe(true);
    expect(captureStopRecord(reset, releaseAt)).toMatchObject({
      sandboxId: "sb-123",
      team: "t1",
      user: "u1",
      claimedAt: AT,
      startedAt: AT,
      containerImages: { main: APP_IMAGE, proxy: "proxy:1" },
      metadata: { purpose: "test" },
      stopReason: "Completed",
      containerId: "containerd://main-3",
    });

    const idleAgain = apply(reset, toJsonPatch(reset, ok(completeStoppingIntent(reset, releaseAt))));
    const { [INPLACE_UPDATE_STATE_ANNOTATION]: finalState, ...rest } = idleAgain.metadata?.annotations ?? {};
    expect(rest).toEqual({ "keep/me": "yes" });
    expect(idleAgain.metadata?.labels).toEqual(idle.metadata?.labels);
    expect(JSON.parse(finalState ?? "")).toEqual({
      phase: "completed",
      targetImages: { main: IDLE_IMAGE, proxy: PROXY_PINNED },
      targetPodPhase: "idle",
      updateTimestamp: "2026-05-10T13:00:00Z",
      lastContainerStatuses: {
        main: { imageID: expect.any(String), containerID: "containerd://main-3" },
        proxy: { imageID: expect.any(String), containerID: "containerd://proxy-2" },
      },
    });
    expect(idleAgain.spec?.containers.map((c) => c.image)).toEqual([IDLE_IMAGE, PROXY_PINNED]);
    expect(servedContainers(idleAgain)).toEqual(new Set());

    // The next sandbox restarts nothing that is fresh; its release swaps the sidecar back to the
    // pool's spelling, which restarts it again.
    const second = ok(claimIntent(idleAgain, { ...claim, sandboxId: "sb-456" }, NOW));
    expect(second.containerImages).toEqual({ main: APP_IMAGE });
    const running2 = (() => {
      const started = kubelet(apply(idleAgain, toJsonPatch(idleAgain, second)), 5);
      return apply(started, toJsonPatch(started, ok(completeStartingIntent(started, NOW))));
    })();
    const release2 = ok(releaseIntent(running2, { idleImages: { main: IDLE_IMAGE, proxy: "proxy:1" } }, NOW));
    expect(release2.containerImages).toEqual({ main: IDLE_IMAGE, proxy: "proxy:1" });
  });
});

describe("releaseIntent", () => {
  function runningPod(): V1Pod {
    const pod = idlePod();
    const intent = ok(claimIntent(pod, claim, NOW));
    const started = kubelet(apply(pod, toJsonPatch(pod, intent)), 3);
    return apply(started, toJsonPatch(started, ok(completeStartingIntent(started, NOW))));
  }
  const idleImages = { main: IDLE_IMAGE };

  it("records a release before the sandbox ever ran as Canceled; a failure then stays Failed", () => {
    const pod = idlePod();
    const starting = apply(pod, toJsonPatch(pod, ok(claimIntent(pod, claim, NOW))));
    const reason = (stopReason: "Released" | "Failed") =>
      ok(releaseIntent(starting, { idleImages, stopReason }, NOW)).setAnnotations[STOP_REASON_ANNOTATION];
    expect(reason("Released")).toBe("Canceled");
    expect(reason("Failed")).toBe("Failed");
    expect(
      ok(releaseIntent(runningPod(), { idleImages, stopReason: "Released" }, NOW)).setAnnotations,
    ).toMatchObject({
      [STOP_REASON_ANNOTATION]: "Released",
    });
  });

  it("writes failure metadata and the exit code when given", () => {
    const intent = ok(
      releaseIntent(
        runningPod(),
        {
          idleImages,
          stopReason: "Failed",
          terminatedAt: "2026-05-10T12:30:00+02:00",
          failureReason: "OOMKilled",
          failureMessage: "container main was OOM-killed",
          exitCode: 137,
        },
        NOW,
      ),
    );
    expect(intent.setAnnotations).toMatchObject({
      [STOP_REASON_ANNOTATION]: "Failed",
      [TERMINATED_AT_ANNOTATION]: "2026-05-10T12:30:00+02:00",
      [FAILURE_REASON_ANNOTATION]: "OOMKilled",
      [FAILURE_MESSAGE_ANNOTATION]: "container main was OOM-killed",
      [EXIT_CODE_ANNOTATION]: "137",
    });
  });

  it("defaults: Completed, terminated now, no failure fields (stale ones removed)", () => {
    const pod = runningPod();
    pod.metadata!.annotations![FAILURE_REASON_ANNOTATION] = "stale";
    const intent = ok(releaseIntent(pod, { idleImages }, NOW));
    expect(intent.setAnnotations[STOP_REASON_ANNOTATION]).toBe("Completed");
    expect(intent.setAnnotations[TERMINATED_AT_ANNOTATION]).toBe(AT);
    expect(intent.setAnnotations).not.toHaveProperty(FAILURE_REASON_ANNOTATION);
    expect(intent.setAnnotations).not.toHaveProperty(EXIT_CODE_ANNOTATION);
    expect(toJsonPatch(pod, intent)).toContainEqual({
      op: "remove",
      path: "/metadata/annotations/agentbox.navix.sh~1failure-reason",
    });
  });

  it("cancels a sandbox that is still starting (container id from the live status)", () => {
    const pod = idlePod();
    const starting = apply(pod, toJsonPatch(pod, ok(claimIntent(pod, claim, NOW))));
    const intent = ok(releaseIntent(starting, { idleImages, stopReason: "Canceled" }, NOW));
    expect(intent.expectPhase).toBe("starting");
    expect(intent.setAnnotations[CONTAINER_ID_ANNOTATION]).toBe("containerd://main-1");
    expect(intent.setAnnotations[RUNNING_IMAGES_ANNOTATION]).toBe(
      `{"main":"${APP_IMAGE}","proxy":"proxy:1"}`,
    );
    expect(releaseIntent(starting, { idleImages, expectPhase: "running" }, NOW)).toEqual({
      ok: false,
      reason: "pod is starting, not running",
    });
  });

  it("idle images equal to the running ones: every container is still restarted, pinned to its digest", () => {
    const intent = ok(releaseIntent(runningPod(), { idleImages: { main: APP_IMAGE } }, NOW));
    const pinned = { main: `${APP_IMAGE}@sha256:${"3".repeat(64)}`, proxy: PROXY_PINNED };
    expect(intent.containerImages).toEqual(pinned);
    expect(JSON.parse(intent.setAnnotations[INPLACE_UPDATE_STATE_ANNOTATION] ?? "").targetImages).toEqual(
      pinned,
    );
    expect(intent.setAnnotations).not.toHaveProperty(REPLACE_ON_RESET_ANNOTATION);
  });

  it("a container that cannot be restarted in place (digest-only image) has its pod replaced", () => {
    const pod = runningPod();
    const digestOnly = `registry.example/proxy@sha256:${"9".repeat(64)}`;
    pod.spec!.containers[1]!.image = digestOnly;
    pod.status!.containerStatuses![1] = status("proxy", digestOnly, 9);
    const intent = ok(releaseIntent(pod, { idleImages: { main: IDLE_IMAGE } }, NOW));
    expect(intent.containerImages).toEqual({});
    expect(intent.setAnnotations[REPLACE_ON_RESET_ANNOTATION]).toMatch(/proxy cannot be restarted in place/);
    expect(JSON.parse(intent.setAnnotations[INPLACE_UPDATE_STATE_ANNOTATION] ?? "").targetImages).toEqual({});
  });

  it("a pool that resets by replacement: no image change, the pod is marked", () => {
    const intent = ok(releaseIntent(runningPod(), { idleImages, replace: true }, NOW));
    expect(intent.containerImages).toEqual({});
    expect(intent.setAnnotations[REPLACE_ON_RESET_ANNOTATION]).toBe(REPLACE_BY_POLICY);
  });

  it.each<[string, V1Pod, object, RegExp]>([
    ["idle pod", idlePod(), {}, /idle, not running/],
    ["unknown stop reason", runningPod(), { stopReason: "Exploded" }, /unknown stop reason/],
    ["bad terminatedAt", runningPod(), { terminatedAt: "soon" }, /RFC 3339/],
    ["fractional exit code", runningPod(), { exitCode: 1.5 }, /32-bit/],
    ["exit code out of range", runningPod(), { exitCode: 2 ** 31 }, /32-bit/],
    ["unknown idle container", runningPod(), { idleImages: { ghost: "x" } }, /"ghost" not found/],
    ["no idle images", runningPod(), { idleImages: {} }, /required/],
  ])("refuses: %s", (_name, pod, over, reason) => {
    const result = releaseIntent(pod, { idleImages, ...over }, NOW);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toMatch(reason);
  });
});

describe("completion intents", () => {
  it("refuse a pod whose state does not match its phase", () => {
    const pod = idlePod();
    pod.metadata!.labels![SANDBOX_PHASE_LABEL] = "stopping";
    expect(completeStoppingIntent(pod, NOW)).toEqual({
      ok: false,
      reason: "pod has no in-place update state",
    });
    pod.metadata!.annotations![INPLACE_UPDATE_STATE_ANNOTATION] = '{"phase":"completed"}';
    expect(completeStoppingIntent(pod, NOW)).toEqual({
      ok: false,
      reason: "in-place update is completed, not stopping",
    });
    pod.metadata!.annotations![INPLACE_UPDATE_STATE_ANNOTATION] = "{bad";
    const bad = completeStoppingIntent(pod, NOW);
    expect(bad.ok === false && bad.reason).toMatch(/invalid JSON/);
  });

  it("completeStoppingIntent removes the managed keys still listed and every sandbox key", () => {
    const pod = idlePod();
    pod.metadata!.labels![SANDBOX_PHASE_LABEL] = "stopping";
    pod.metadata!.labels!["example.com/tier"] = "gold";
    pod.metadata!.annotations![MANAGED_LABEL_KEYS_ANNOTATION] =
      '["example.com/tier","agentbox.navix.sh/sandbox-pool"]';
    pod.metadata!.annotations![INPLACE_UPDATE_STATE_ANNOTATION] = '{"phase":"stopping"}';
    const intent = ok(completeStoppingIntent(pod, NOW));
    expect(intent.removeLabels).toEqual([
      SANDBOX_ID_LABEL,
      MANAGED_BY_LABEL,
      TEAM_LABEL,
      USER_LABEL,
      CLAIMED_BY_LABEL,
      EGRESS_LABEL,
      "example.com/tier",
    ]);
    expect(intent.removeAnnotations).toContain(SANDBOX_STATUS_DETAIL_ANNOTATION);
    expect(intent.removeAnnotations).toContain(STARTUP_TIMEOUT_ANNOTATION);
    expect(intent.removeAnnotations).not.toContain(SCALE_DOWN_PROTECTED_ANNOTATION);
  });
});

describe("failIntent", () => {
  it("marks any live phase failed, with an optional detail", () => {
    const pod = idlePod();
    const detail = { reason: "PodFailed", message: "Evicted", lastUpdatedTime: AT };
    expect(ok(failIntent(pod, detail))).toEqual({
      expectPhase: "idle",
      setLabels: { [SANDBOX_PHASE_LABEL]: "failed" },
      removeLabels: [],
      setAnnotations: { [SANDBOX_STATUS_DETAIL_ANNOTATION]: JSON.stringify(detail) },
      removeAnnotations: [],
      containerImages: {},
    });
    pod.metadata!.labels![SANDBOX_PHASE_LABEL] = "failed";
    expect(failIntent(pod).ok).toBe(false);
  });
});

describe("a container never serves two sandboxes", () => {
  /** servedIdle is an idle pod a reset of an older controller left: state says idle, no ids kept. */
  function servedIdle(): V1Pod {
    const pod = idlePod();
    pod.metadata!.annotations![INPLACE_UPDATE_STATE_ANNOTATION] = JSON.stringify({
      phase: "completed",
      targetImages: {},
      targetPodPhase: "idle",
      updateTimestamp: AT,
    });
    return pod;
  }

  it("a pod never claimed runs fresh containers: the same-image claim takes the fast path", () => {
    expect(servedContainers(idlePod())).toEqual(new Set());
    const intent = ok(claimIntent(idlePod(), { sandboxId: "s", containerImages: { main: IDLE_IMAGE } }, NOW));
    expect(intent.setLabels[SANDBOX_PHASE_LABEL]).toBe("running");
    expect(intent.containerImages).toEqual({});
  });

  it("containers left by a reset that restarted nothing are restarted by the claim, same image or not", () => {
    const pod = servedIdle();
    expect(servedContainers(pod)).toEqual(new Set(["main", "proxy"]));
    const same = ok(claimIntent(pod, { sandboxId: "s", containerImages: { main: IDLE_IMAGE } }, NOW));
    expect(same.setLabels[SANDBOX_PHASE_LABEL]).toBe("starting");
    expect(same.containerImages).toEqual({
      main: `${IDLE_IMAGE}@sha256:${"1".repeat(64)}`,
      proxy: PROXY_PINNED,
    });
    const other = ok(claimIntent(pod, { sandboxId: "s", containerImages: { main: APP_IMAGE } }, NOW));
    expect(other.containerImages).toEqual({ main: APP_IMAGE, proxy: PROXY_PINNED });
  });

  it("a served container with the same id as the reset recorded is not fresh", () => {
    const pod = servedIdle();
    pod.metadata!.annotations![INPLACE_UPDATE_STATE_ANNOTATION] = JSON.stringify({
      phase: "completed",
      targetPodPhase: "idle",
      lastContainerStatuses: {
        main: { containerID: "containerd://main-0" },
        proxy: { containerID: "containerd://proxy-2" },
      },
    });
    expect(servedContainers(pod)).toEqual(new Set(["proxy"]));
  });

  it("a served container that cannot be restarted in place refuses the claim", () => {
    const pod = servedIdle();
    const digestOnly = `registry.example/proxy@sha256:${"9".repeat(64)}`;
    pod.spec!.containers[1]!.image = digestOnly;
    pod.status!.containerStatuses![1] = status("proxy", digestOnly, 9);
    const result = claimIntent(pod, claim, NOW);
    expect(result).toEqual({ ok: false, reason: expect.stringMatching(/proxy served an earlier sandbox/) });
  });
});
