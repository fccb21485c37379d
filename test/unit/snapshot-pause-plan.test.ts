import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import {
  EGRESS_LABEL,
  END_AT_ANNOTATION,
  IDLE_TIMEOUT_ANNOTATION,
  MANAGED_ANNOTATION_KEYS_ANNOTATION,
  MANAGED_LABEL_KEYS_ANNOTATION,
  NETWORK_ANNOTATION,
  ON_TIMEOUT_ANNOTATION,
  POST_START_HOOKS_ANNOTATION,
  SANDBOX_METADATA_ANNOTATION,
  SEALED_ENV_VARS_ANNOTATION,
  STARTED_AT_ANNOTATION,
  STARTUP_TIMEOUT_ANNOTATION,
  TEAM_LABEL,
  TRAFFIC_ANNOTATION,
  USER_LABEL,
} from "../../lib/crd/keys.ts";
import type { SnapshotSource } from "../../lib/crd/sandbox-snapshot.ts";
import { type PausePlan, pausePlan, runsSource } from "../../lib/snapshots/pause-plan.ts";
import { runningPod, SANDBOX } from "../support/snapshot-fixtures.ts";

// What a pause reads from a running sandbox's pod, and whether a pod still runs what it recorded.

const NOW = new Date("2026-12-02T10:00:00.300Z");
const DIGEST = `registry.example/py@sha256:${"a".repeat(64)}`;

/** fullPod is a running sandbox with every field a pause records, and two containers. */
function fullPod(): V1Pod {
  const pod = runningPod({
    labels: {
      [TEAM_LABEL]: "research",
      [USER_LABEL]: "alice",
      "example.com/tier": "gold",
      [EGRESS_LABEL]: "e1",
    },
    annotations: {
      [END_AT_ANNOTATION]: "2026-12-02T10:04:00Z",
      [MANAGED_LABEL_KEYS_ANNOTATION]: '["example.com/tier","example.com/gone",7]',
      [MANAGED_ANNOTATION_KEYS_ANNOTATION]: '["example.com/note"]',
      "example.com/note": "hi",
      "example.com/unlisted": "not the caller's",
      [NETWORK_ANNOTATION]: '{"denyOut":["192.0.2.0/24"]}',
      [TRAFFIC_ANNOTATION]: "private",
      [ON_TIMEOUT_ANNOTATION]: "pause",
      [SANDBOX_METADATA_ANNOTATION]: '{"run":"7","n":3}',
      [IDLE_TIMEOUT_ANNOTATION]: "600",
      [STARTUP_TIMEOUT_ANNOTATION]: "120.9",
      [SEALED_ENV_VARS_ANNOTATION]: "v1.sealed",
    },
  });
  pod.spec!.containers.push({ name: "proxy", image: "proxy:1" });
  pod.status!.containerStatuses![0]!.imageID = `docker-pullable://${DIGEST}`;
  pod.status!.containerStatuses!.push({
    name: "proxy",
    image: "proxy:1",
    imageID: "sha256:0123", // an image id, not a repository digest: the spec's image is kept
    containerID: "containerd://p1",
    ready: true,
    restartCount: 0,
    state: { running: {} },
  });
  return pod;
}

function plan(pod: V1Pod, now = NOW): Extract<PausePlan, { ok: true }> {
  const p = pausePlan(pod, now, 3600);
  if (!p.ok) throw new Error(`expected a plan, got: ${p.message}`);
  return p;
}

function withAnnotation(key: string, value: string): V1Pod {
  return runningPod({ annotations: { [key]: value } });
}

describe("pausePlan", () => {
  it("records the exact containers, the owner, caller keys, marks, metadata, timeouts, time left and env", () => {
    expect(pausePlan(fullPod(), NOW, 3600)).toEqual({
      ok: true,
      sandboxId: SANDBOX,
      pool: "python",
      source: {
        node: "n1",
        pod: "python-x",
        podUID: "uid-1",
        podIP: "10.0.0.5",
        containers: [
          { name: "sandbox", containerID: "containerd://c1", image: DIGEST },
          { name: "proxy", containerID: "containerd://p1", image: "proxy:1" },
        ],
        // The pause's deadline: the default wait for the commit (COMMIT_WAIT_MS) from now.
        commitUntil: "2026-12-02T10:02:00Z",
      },
      claim: {
        containerImages: { sandbox: "py:1", proxy: "proxy:1" },
        team: "research",
        user: "alice",
        labels: { "example.com/tier": "gold" },
        annotations: { "example.com/note": "hi" },
        markLabels: { [EGRESS_LABEL]: "e1" },
        markAnnotations: {
          [NETWORK_ANNOTATION]: '{"denyOut":["192.0.2.0/24"]}',
          [TRAFFIC_ANNOTATION]: "private",
          [ON_TIMEOUT_ANNOTATION]: "pause",
        },
        metadata: { run: "7" },
        idleTimeoutSeconds: 600,
        startupTimeoutSeconds: 120,
        lifetimeSeconds: 240, // 239.7 s left, rounded up
        sealedEnvVars: "v1.sealed",
      },
      retainUntil: "2026-12-02T11:00:00Z",
    });
  });

  it("the pause's deadline is its caller's wait from now", () => {
    const plan = pausePlan(fullPod(), NOW, 3600, 50_000);
    expect(plan.ok && plan.source.commitUntil).toBe("2026-12-02T10:00:50Z");
  });

  it("a bare running sandbox: only its images and an empty team", () => {
    const pod = runningPod();
    delete pod.status!.podIP;
    expect(pausePlan(pod, NOW, 60)).toEqual({
      ok: true,
      sandboxId: SANDBOX,
      pool: "python",
      source: {
        node: "n1",
        pod: "python-x",
        podUID: "uid-1",
        containers: [{ name: "sandbox", containerID: "containerd://c1", image: "py:1" }],
        commitUntil: "2026-12-02T10:02:00Z",
      },
      claim: { containerImages: { sandbox: "py:1" }, team: "" },
      retainUntil: "2026-12-02T10:01:00Z",
    });
  });

  const notRunning: [string, () => V1Pod, string][] = [
    ["starting", () => runningPod({ phase: "starting" }), "sandbox sbx-1 is starting, not running"],
    ["stopping", () => runningPod({ phase: "stopping" }), "sandbox sbx-1 is stopping, not running"],
    ["no phase", () => runningPod({ phase: "weird" }), "sandbox sbx-1 is not claimed, not running"],
    ["no sandbox id", () => runningPod({ id: "" }), "sandbox ? is running, not running"],
    [
      "terminating",
      () => runningPod({ terminating: true }),
      "sandbox sbx-1 is ending (its pod is being deleted)",
    ],
    [
      "hooks pending",
      () => withAnnotation(POST_START_HOOKS_ANNOTATION, "[]"),
      "sandbox sbx-1 is still starting (envd not initialised yet)",
    ],
    [
      "not on a node",
      () => {
        const pod = runningPod();
        delete pod.spec!.nodeName;
        return pod;
      },
      "sandbox sbx-1's pod is not on a node",
    ],
    [
      "a container waiting",
      () => {
        const pod = runningPod();
        pod.status!.containerStatuses![0]!.state = { waiting: { reason: "CrashLoopBackOff" } };
        return pod;
      },
      "sandbox sbx-1's container sandbox is not running",
    ],
    [
      "a container without an id",
      () => {
        const pod = runningPod();
        delete pod.status!.containerStatuses![0]!.containerID;
        return pod;
      },
      "sandbox sbx-1's container sandbox is not running",
    ],
    [
      "a container without a status",
      () => {
        const pod = runningPod();
        pod.spec!.containers.push({ name: "late", image: "late:1" });
        return pod;
      },
      "sandbox sbx-1's container late is not running",
    ],
    [
      "no containers",
      () => {
        const pod = runningPod();
        pod.spec!.containers = [];
        return pod;
      },
      "sandbox sbx-1's pod has no containers",
    ],
  ];
  it.each(notRunning)("%s → not-running", (_name, pod, message) => {
    expect(pausePlan(pod(), NOW, 3600)).toEqual({ ok: false, reason: "not-running", message });
  });

  it.each<[string | undefined, number | undefined]>([
    ["2026-12-02T10:00:01Z", 1], // 0.7 s left → 1
    ["2026-12-02T10:00:00.300Z", undefined], // none left, no lifetime given → none
    ["2026-12-02T09:00:00Z", undefined], // past (an auto-pause), no lifetime given → none
    ["2026-12-02T11:00:00.301Z", 3601], // 3600.001 s → 3601
    ["not a time", undefined],
    [undefined, undefined],
  ])("end-at %s → lifetime left %s", (endAt, left) => {
    const pod = endAt === undefined ? runningPod() : withAnnotation(END_AT_ANNOTATION, endAt);
    expect(plan(pod).claim.lifetimeSeconds).toBe(left);
  });

  it("gives a sandbox paused at the end of its lifetime (auto-pause) its whole lifetime again", () => {
    // Started 08:50, ended 09:00: it was given 600 s (a running sandbox keeps no lifetime annotation).
    const pod = runningPod({
      annotations: {
        [END_AT_ANNOTATION]: "2026-12-02T09:00:00Z",
        [STARTED_AT_ANNOTATION]: "2026-12-02T08:50:00Z",
      },
    });
    expect(plan(pod).claim.lifetimeSeconds).toBe(600);
    // With time left, the time left.
    const early = runningPod({
      annotations: {
        [END_AT_ANNOTATION]: "2026-12-02T10:01:00Z",
        [STARTED_AT_ANNOTATION]: "2026-12-02T09:50:00Z",
      },
    });
    expect(plan(early).claim.lifetimeSeconds).toBe(60);
  });

  it.each<[string, string | undefined, Record<string, string> | undefined]>([
    ["listed and present", '["a","b"]', { a: "1", b: "2" }],
    ["listed, one absent", '["a","zzz"]', { a: "1" }],
    ["not JSON", "[a", undefined],
    ["not an array", '{"a":1}', undefined],
    ["empty", "[]", undefined],
    ["no managed keys", undefined, undefined],
  ])("caller labels and annotations by managed keys: %s", (_name, keys, picked) => {
    const pod = runningPod({
      labels: { a: "1", b: "2", c: "3" },
      annotations: {
        a: "1",
        b: "2",
        c: "3",
        ...(keys === undefined
          ? {}
          : { [MANAGED_LABEL_KEYS_ANNOTATION]: keys, [MANAGED_ANNOTATION_KEYS_ANNOTATION]: keys }),
      },
    });
    const { claim } = plan(pod);
    expect(claim.labels).toEqual(picked);
    expect(claim.annotations).toEqual(picked);
  });

  it("labels and annotations are picked each by its own managed keys", () => {
    const pod = runningPod({
      labels: { l: "label" },
      annotations: {
        n: "note",
        [MANAGED_LABEL_KEYS_ANNOTATION]: '["l","n"]',
        [MANAGED_ANNOTATION_KEYS_ANNOTATION]: '["n","l"]',
      },
    });
    expect(plan(pod).claim).toMatchObject({ labels: { l: "label" }, annotations: { n: "note" } });
  });

  it.each<[string, number | undefined]>([
    ["600", 600],
    ["12.9", 12],
    ["0", undefined],
    ["0.5", undefined],
    ["-5", undefined],
    ["", undefined],
    ["soon", undefined],
  ])("timeout annotation %j → %s", (raw, seconds) => {
    const pod = runningPod({
      annotations: { [IDLE_TIMEOUT_ANNOTATION]: raw, [STARTUP_TIMEOUT_ANNOTATION]: raw },
    });
    const { claim } = plan(pod);
    expect(claim.idleTimeoutSeconds).toBe(seconds);
    expect(claim.startupTimeoutSeconds).toBe(seconds);
  });

  it.each<[string, Record<string, string> | undefined]>([
    ['{"a":"1","b":2,"c":null}', { a: "1" }],
    ['{"b":2}', undefined],
    ["[]", undefined],
    ["null", undefined],
    ["{bad", undefined],
  ])("metadata %s → %j", (raw, metadata) => {
    expect(plan(withAnnotation(SANDBOX_METADATA_ANNOTATION, raw)).claim.metadata).toEqual(metadata);
  });

  it.each<[string | undefined, string]>([
    [`docker-pullable://${DIGEST}`, DIGEST],
    [DIGEST, DIGEST],
    [`registry.example/py@sha256:${"a".repeat(63)}`, "py:1"],
    ["sha256:abc", "py:1"],
    [undefined, "py:1"],
  ])("container image from imageID %s → %s", (imageID, image) => {
    const pod = runningPod();
    pod.status!.containerStatuses![0]!.imageID = imageID as string;
    expect(plan(pod).source.containers[0]?.image).toBe(image);
  });
});

describe("runsSource", () => {
  const source: SnapshotSource = plan(runningPod()).source;

  it("the pod the pause recorded, unchanged, runs it", () => {
    expect(runsSource(runningPod(), SANDBOX, source)).toBe(true);
  });

  it.each<[string, V1Pod | undefined, string]>([
    ["no pod", undefined, SANDBOX],
    ["a container restart (another container id)", runningPod({ containerID: "containerd://c2" }), SANDBOX],
    ["another pod (uid)", runningPod({ uid: "uid-2" }), SANDBOX],
    ["another sandbox on the pod", runningPod({ id: "sbx-2" }), SANDBOX],
    ["asked for another sandbox", runningPod(), "sbx-2"],
    ["released (stopping)", runningPod({ phase: "stopping" }), SANDBOX],
    ["idle again", runningPod({ phase: "idle", id: "" }), SANDBOX],
    ["terminating", runningPod({ terminating: true }), SANDBOX],
  ])("%s → false", (_name, pod, id) => {
    expect(runsSource(pod, id, source)).toBe(false);
  });

  it("a recorded container the pod no longer reports → false", () => {
    const two = {
      ...source,
      containers: [...source.containers, { name: "proxy", containerID: "x", image: "p" }],
    };
    expect(runsSource(runningPod(), SANDBOX, two)).toBe(false);
  });
});
