import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { envdAccessToken, importSealKeys, trafficAccessToken } from "../../lib/claims/sealing.ts";
import {
  EGRESS_LABEL,
  INCARNATION_ANNOTATION,
  INPLACE_UPDATE_STATE_ANNOTATION,
  NETWORK_ANNOTATION,
  ON_TIMEOUT_ANNOTATION,
  RESUME_ATTEMPT_ANNOTATION,
  SANDBOX_ID_ANNOTATION,
  SANDBOX_PHASE_LABEL,
  SEALED_ENV_VARS_ANNOTATION,
  STARTED_AT_ANNOTATION,
  STOP_REASON,
  STOP_REASON_ANNOTATION,
} from "../../lib/crd/keys.ts";
import { type SandboxSnapshot, SNAPSHOT_PHASE } from "../../lib/crd/sandbox-snapshot.ts";
import { incarnationOf } from "../../lib/lifecycle/incarnation.ts";
import { toJsonPatch } from "../../lib/lifecycle/intent-patch.ts";
import { SANDBOX_ANNOTATIONS } from "../../lib/lifecycle/lifecycle-keys.ts";
import type { PodIntent } from "../../lib/lifecycle/pod-intent.ts";
import { captureStopRecord } from "../../lib/lifecycle/stop-record.ts";
import { claimIntent, completeStoppingIntent } from "../../lib/lifecycle/transitions.ts";
import { resumeClaim } from "../../lib/snapshots/snapshot-state.ts";
import { runningPod, SANDBOX, snapshot } from "../support/snapshot-fixtures.ts";

// A resumed sandbox's new life on a pod: its incarnation, the envd token derived from it, the
// claim a resume makes (snapshot images, first claim, marks) and that the return to idle removes
// its marks, and a pause's stop with no record.

const NOW = new Date("2026-12-02T10:00:00Z");
const SECRET = "a sealing secret of at least 32 characters";
const utf8 = new TextEncoder();
const IMAGE = "registry.agentbox.test/agentbox-snapshots/team-a/sbx-1/sandbox:g1@sha256:ab";

/** hmac is the token key's HMAC of a label, base64url: the token envdAccessToken must give. */
async function hmac(key: CryptoKey, label: string): Promise<string> {
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, utf8.encode(label)));
  return btoa(String.fromCharCode(...mac))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replace(/=+$/, "");
}

describe("incarnationOf", () => {
  it.each<[string | undefined, number]>([
    [undefined, 0],
    ["0", 0],
    ["1", 1],
    ["12", 12],
    ["-1", 0],
    ["1.5", 0],
    ["", 0],
    ["two", 0],
    ["9007199254740993", 0], // not a safe integer
  ])("annotation %j → %s", (raw, n) => {
    const pod =
      raw === undefined ? runningPod() : runningPod({ annotations: { [INCARNATION_ANNOTATION]: raw } });
    expect(incarnationOf(pod)).toBe(n);
  });

  it("no pod, or one without annotations → 0", () => {
    expect(incarnationOf(undefined)).toBe(0);
    expect(incarnationOf({})).toBe(0);
  });
});

describe("envdAccessToken with an incarnation", () => {
  it("incarnation 0 is the token of before (label envd:<id>); n > 0 a new one per n; traffic unchanged", async () => {
    const keys = await importSealKeys(SECRET);
    const first = await envdAccessToken(keys, SANDBOX);
    expect(first).toBe(await hmac(keys.token, `envd:${SANDBOX}`));
    expect(await envdAccessToken(keys, SANDBOX, 0)).toBe(first);
    const one = await envdAccessToken(keys, SANDBOX, 1);
    const two = await envdAccessToken(keys, SANDBOX, 2);
    expect(one).toBe(await hmac(keys.token, `envd:${SANDBOX}:1`));
    expect(two).toBe(await hmac(keys.token, `envd:${SANDBOX}:2`));
    expect(new Set([first, one, two]).size).toBe(3);
    expect(await envdAccessToken(keys, SANDBOX, 1)).toBe(one);
    expect(await envdAccessToken(keys, "sbx-2", 1)).not.toBe(one);
    const traffic = await trafficAccessToken(keys, SANDBOX);
    expect(traffic).toBe(await hmac(keys.token, `traffic:${SANDBOX}`));
    expect([first, one, two]).not.toContain(traffic);
  });
});

describe("captureStopRecord of a paused sandbox's pod", () => {
  const stopping = (reason: string) =>
    runningPod({
      phase: "stopping",
      annotations: {
        [SANDBOX_ID_ANNOTATION]: SANDBOX,
        [STOP_REASON_ANNOTATION]: reason,
        [STARTED_AT_ANNOTATION]: "2026-12-02T09:00:00Z",
      },
    });

  it("stop reason Paused: no terminal record (the sandbox lives on in its snapshot)", () => {
    expect(captureStopRecord(stopping(STOP_REASON.PAUSED), NOW)).toBeUndefined();
  });

  it.each([STOP_REASON.RELEASED, STOP_REASON.COMPLETED, STOP_REASON.FAILED])(
    "stop reason %s: recorded",
    (reason) => {
      expect(captureStopRecord(stopping(reason), NOW)).toMatchObject({
        sandboxId: SANDBOX,
        stopReason: reason,
      });
    },
  );
});

/** applied is the pod after an intent (labels and annotations only). */
function applied(pod: V1Pod, intent: PodIntent): V1Pod {
  const out = structuredClone(pod);
  const labels = { ...out.metadata?.labels, ...intent.setLabels };
  const annotations = { ...out.metadata?.annotations, ...intent.setAnnotations };
  for (const k of intent.removeLabels) delete labels[k];
  for (const k of intent.removeAnnotations) delete annotations[k];
  out.metadata = { ...out.metadata, labels, annotations };
  return out;
}

describe("a resume's claim marks on a pod", () => {
  const RESUME_MARKS = [
    SEALED_ENV_VARS_ANNOTATION,
    INCARNATION_ANNOTATION,
    RESUME_ATTEMPT_ANNOTATION,
    ON_TIMEOUT_ANNOTATION,
  ];

  it("are listed in SANDBOX_ANNOTATIONS", () => {
    for (const key of RESUME_MARKS) expect(SANDBOX_ANNOTATIONS).toContain(key);
  });

  it("are accepted by the claim and removed by the return to idle", () => {
    const s = snapshot(SNAPSHOT_PHASE.PAUSED, { resumes: 1 });
    s.spec.claim = {
      ...s.spec.claim,
      markLabels: { [EGRESS_LABEL]: "e1" },
      markAnnotations: { [NETWORK_ANNOTATION]: "{}", [ON_TIMEOUT_ANNOTATION]: "pause" },
      sealedEnvVars: "v1.sealed",
    };
    s.status = {
      ...s.status,
      images: { sandbox: "registry.agentbox.test/agentbox-snapshots/x:g1@sha256:ab" },
    };
    const claim = resumeClaim(s, "att-1");
    const idle = runningPod({ phase: "idle", id: "" });
    idle.metadata!.resourceVersion = "10";
    const claimed = claimIntent(
      idle,
      { sandboxId: SANDBOX, containerImages: claim.containerImages, team: claim.team, marks: claim.marks },
      NOW,
    );
    if (!claimed.ok) throw new Error(claimed.reason);
    expect(claimed.intent.setAnnotations).toMatchObject({
      [SEALED_ENV_VARS_ANNOTATION]: "v1.sealed",
      [INCARNATION_ANNOTATION]: "2",
      [RESUME_ATTEMPT_ANNOTATION]: "att-1",
      [ON_TIMEOUT_ANNOTATION]: "pause",
      [NETWORK_ANNOTATION]: "{}",
    });
    expect(claimed.intent.setLabels[EGRESS_LABEL]).toBe("e1");
    expect(incarnationOf(applied(idle, claimed.intent))).toBe(2);

    // The sandbox ran and was released: the pod is stopping with every mark still on it.
    const stopping = applied(idle, claimed.intent);
    stopping.metadata!.labels![SANDBOX_PHASE_LABEL] = "stopping";
    stopping.metadata!.annotations![INPLACE_UPDATE_STATE_ANNOTATION] = '{"phase":"stopping"}';
    const toIdle = completeStoppingIntent(stopping, NOW);
    if (!toIdle.ok) throw new Error(toIdle.reason);
    const removed = toJsonPatch(stopping, toIdle.intent)
      .filter((op) => op.op === "remove")
      .map((op) => op.path);
    for (const key of RESUME_MARKS)
      expect(removed).toContain(`/metadata/annotations/${key.replaceAll("/", "~1")}`);
    expect(removed).toContain(`/metadata/labels/${EGRESS_LABEL.replaceAll("/", "~1")}`);
    const idleAgain = applied(stopping, toIdle.intent);
    for (const key of [...RESUME_MARKS, NETWORK_ANNOTATION])
      expect(idleAgain.metadata?.annotations).not.toHaveProperty(key);
    expect(idleAgain.metadata?.labels).not.toHaveProperty(EGRESS_LABEL);
    expect(incarnationOf(idleAgain)).toBe(0);
  });

  it("a mark the return to idle would not remove refuses the claim", () => {
    const idle = runningPod({ phase: "idle", id: "" });
    expect(
      claimIntent(
        idle,
        {
          sandboxId: SANDBOX,
          containerImages: { sandbox: "py:2" },
          marks: { annotations: { "agentbox.navix.sh/not-listed": "x" } },
        },
        NOW,
      ),
    ).toEqual({
      ok: false,
      reason: "marks the return to idle would not remove: agentbox.navix.sh/not-listed",
    });
  });
});

describe("resumeClaim", () => {
  function paused(resumes?: number): SandboxSnapshot {
    const s = snapshot(SNAPSHOT_PHASE.PAUSED, resumes === undefined ? {} : { resumes });
    s.spec.source.containers.push({ name: "proxy", containerID: "containerd://p1", image: "proxy:1" });
    s.spec.claim = {
      containerImages: { sandbox: "py:1", proxy: "proxy:1", extra: "extra:1" },
      team: "research",
      user: "alice",
      labels: { "example.com/tier": "gold" },
      annotations: { "example.com/note": "hi" },
      markLabels: { [EGRESS_LABEL]: "e1" },
      markAnnotations: { [NETWORK_ANNOTATION]: "{}" },
      metadata: { run: "7" },
      idleTimeoutSeconds: 600,
      startupTimeoutSeconds: 120,
      lifetimeSeconds: 240,
      sealedEnvVars: "v1.sealed",
    };
    s.status = { ...s.status, images: { sandbox: IMAGE, proxy: `${IMAGE}-proxy` } };
    return s;
  }

  it("the snapshot images over the committed containers, the first claim, incarnation, attempt, env", () => {
    expect(resumeClaim(paused(), "att-1")).toEqual({
      containerImages: { sandbox: IMAGE, proxy: `${IMAGE}-proxy`, extra: "extra:1" },
      team: "research",
      user: "alice",
      labels: { "example.com/tier": "gold" },
      annotations: { "example.com/note": "hi" },
      metadata: { run: "7" },
      idleTimeoutSeconds: 600,
      startupTimeoutSeconds: 120,
      lifetimeSeconds: 240,
      marks: {
        labels: { [EGRESS_LABEL]: "e1" },
        annotations: {
          [NETWORK_ANNOTATION]: "{}",
          [INCARNATION_ANNOTATION]: "1",
          [RESUME_ATTEMPT_ANNOTATION]: "att-1",
          [SEALED_ENV_VARS_ANNOTATION]: "v1.sealed",
        },
      },
      sealedEnvVars: "v1.sealed",
    });
  });

  it.each<[number | undefined, string]>([
    [undefined, "1"],
    [0, "1"],
    [1, "2"],
    [4, "5"],
  ])("resumes %s → incarnation %s", (resumes, incarnation) => {
    expect(resumeClaim(paused(resumes), "a").marks.annotations[INCARNATION_ANNOTATION]).toBe(incarnation);
  });

  it.each<[number | undefined, number]>([
    [undefined, 240],
    [0, 240],
    [-5, 240],
    [90, 90],
    [90.7, 90],
    [3600, 3600],
  ])("timeout %s → lifetime %s", (timeout, lifetime) => {
    expect(resumeClaim(paused(), "a", timeout).lifetimeSeconds).toBe(lifetime);
  });

  it("a bare snapshot: no optional fields, no sealed env, marks only incarnation and attempt", () => {
    const s = snapshot(SNAPSHOT_PHASE.PAUSED, { resumes: 2 });
    expect(resumeClaim(s, "att-2")).toEqual({
      containerImages: { sandbox: "py:1" },
      team: "research",
      marks: {
        labels: {},
        annotations: { [INCARNATION_ANNOTATION]: "3", [RESUME_ATTEMPT_ANNOTATION]: "att-2" },
      },
    });
    expect(resumeClaim(s, "att-2", 30).lifetimeSeconds).toBe(30);
  });
});
