import type { CoreV1Event, V1ContainerStatus, V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import {
  INPLACE_UPDATE_STATE_ANNOTATION,
  SANDBOX_PHASE_LABEL,
  SANDBOX_STATUS_DETAIL_ANNOTATION,
  type SandboxPhase,
} from "../../lib/crd/keys.ts";
import { buildStatusDetail, withWarningEvents } from "../../lib/lifecycle/diagnostics.ts";

const NOW = new Date("2026-05-10T12:00:00.999Z");
const AT = "2026-05-10T12:00:00Z";

type Status = Partial<V1ContainerStatus>;
function pod(phase: SandboxPhase, statuses: Status[] | undefined, podStatus: V1Pod["status"] = {}): V1Pod {
  return {
    metadata: {
      name: "p1",
      namespace: "ns",
      uid: "uid-1",
      labels: { [SANDBOX_PHASE_LABEL]: phase },
      annotations: {
        [INPLACE_UPDATE_STATE_ANNOTATION]: JSON.stringify({
          phase: "starting",
          targetImages: { main: "app:2" },
        }),
      },
    },
    spec: {
      containers: [
        { name: "main", image: "app:2" },
        { name: "proxy", image: "proxy:1" },
      ],
    },
    status: {
      phase: "Running",
      ...podStatus,
      containerStatuses: statuses as V1ContainerStatus[] | undefined,
    },
  };
}
const c = (name: string, over: Status): Status => ({
  name,
  image: "x",
  imageID: "",
  restartCount: 0,
  ready: false,
  ...over,
});
const runningC = (name: string, over: Status = {}) =>
  c(name, { state: { running: {} }, ready: true, ...over });
const waitingC = (name: string, reason: string, message?: string) =>
  c(name, { state: { waiting: { reason, message } } });
const oom = { terminated: { reason: "OOMKilled", exitCode: 137 } };

describe("buildStatusDetail", () => {
  it.each<[string, V1Pod, string | undefined, string | undefined]>([
    [
      "starting, no statuses yet: Pulling the target image",
      pod("starting", undefined),
      "Pulling",
      "Pulling image: app:2",
    ],
    [
      "starting, old container still running: Pulling",
      pod("starting", [runningC("main"), runningC("proxy")]),
      "Pulling",
      "Pulling image: app:2",
    ],
    [
      "starting, ContainerCreating: Pulling",
      pod("starting", [waitingC("main", "ContainerCreating")]),
      "Pulling",
      "Pulling image: app:2",
    ],
    [
      "ImagePullBackOff with kubelet's message",
      pod("starting", [
        runningC("proxy"),
        waitingC("main", "ImagePullBackOff", 'Back-off pulling image "app:2"'),
      ]),
      "ImagePullBackOff",
      'Back-off pulling image "app:2"',
    ],
    [
      "ErrImagePull without message",
      pod("starting", [waitingC("main", "ErrImagePull")]),
      "ErrImagePull",
      'container "main" is waiting: ErrImagePull',
    ],
    [
      "CrashLoopBackOff",
      pod("starting", [waitingC("main", "CrashLoopBackOff", "back-off 10s restarting failed container")]),
      "CrashLoopBackOff",
      "back-off 10s restarting failed container",
    ],
    [
      "OOMKilled wins over the CrashLoopBackOff it caused",
      pod("starting", [c("main", { state: { waiting: { reason: "CrashLoopBackOff" } }, lastState: oom })]),
      "OOMKilled",
      'container "main" was OOM-killed (exit code 137)',
    ],
    [
      "OOMKilled while terminated",
      pod("failed", [c("main", { state: oom })]),
      "OOMKilled",
      'container "main" was OOM-killed (exit code 137)',
    ],
    [
      "an old OOM kill of a running container is history, not a diagnosis",
      pod("starting", [runningC("main", { lastState: oom })]),
      "Pulling",
      "Pulling image: app:2",
    ],
    [
      "pull errors win over a crash loop in another container",
      pod("starting", [waitingC("proxy", "CrashLoopBackOff"), waitingC("main", "ErrImagePull")]),
      "ErrImagePull",
      'container "main" is waiting: ErrImagePull',
    ],
    [
      "other waiting reasons verbatim",
      pod("starting", [waitingC("main", "CreateContainerConfigError", "secret not found")]),
      "CreateContainerConfigError",
      "secret not found",
    ],
    [
      "PodFailed from the pod alone (starting)",
      pod("starting", [runningC("main")], {
        phase: "Failed",
        reason: "Evicted",
        message: "The node was low on resource: memory.",
      }),
      "PodFailed",
      "Evicted: The node was low on resource: memory.",
    ],
    [
      "PodFailed without reason or message",
      pod("failed", [], { phase: "Failed" }),
      "PodFailed",
      "pod failed",
    ],
    [
      "failed: a non-zero exit",
      pod("failed", [c("main", { state: { terminated: { reason: "Error", exitCode: 2 } } })]),
      "Error",
      'container "main" exited with code 2',
    ],
    [
      "failed: the exit message when present",
      pod("failed", [
        c("main", {
          lastState: { terminated: { exitCode: 1, message: "panic: boom" } },
          state: { running: {} },
        }),
      ]),
      "Error",
      "panic: boom",
    ],
    [
      "failed: a clean in-place swap is not a diagnosis",
      pod("failed", [runningC("main", { lastState: { terminated: { reason: "Completed", exitCode: 0 } } })]),
      undefined,
      undefined,
    ],
    [
      "running: nothing to diagnose",
      pod("running", [waitingC("main", "CrashLoopBackOff")]),
      undefined,
      undefined,
    ],
    ["idle: nothing to diagnose", pod("idle", [waitingC("main", "ErrImagePull")]), undefined, undefined],
    [
      "stopping: nothing to diagnose",
      pod("stopping", [waitingC("main", "ErrImagePull")]),
      undefined,
      undefined,
    ],
  ])("%s", (_name, p, reason, message) => {
    const detail = buildStatusDetail(p, NOW);
    if (reason === undefined) expect(detail).toBeUndefined();
    else expect(detail).toEqual({ reason, message, lastUpdatedTime: AT });
  });
});

describe("buildStatusDetail: a real kubelet's start back-off after a failed pull", () => {
  // As kubelet 1.36 showed it (test/integration/real-node-failures.test.ts): the swap stopped the
  // idle container ("c-idle"), the pull of the target failed, and between pull attempts the
  // kubelet backs off restarting the container that never ran.
  const stopped = { terminated: { containerID: "c-idle", exitCode: 0, reason: "Completed" } };
  const backOff = {
    waiting: { reason: "CrashLoopBackOff", message: "back-off 10s restarting failed container=main" },
  };
  const pullError = { reason: "ImagePullBackOff", message: 'Back-off pulling image "app:2": not found' };
  function stalled(recorded?: object, lastContainerID = "c-idle"): V1Pod {
    const p = pod("starting", [c("main", { containerID: "c-idle", state: backOff, lastState: stopped })]);
    p.metadata!.annotations = {
      [INPLACE_UPDATE_STATE_ANNOTATION]: JSON.stringify({
        phase: "starting",
        targetImages: { main: "app:2" },
        lastContainerStatuses: { main: { imageID: "idle@sha256:1", containerID: lastContainerID } },
      }),
      ...(recorded ? { [SANDBOX_STATUS_DETAIL_ANNOTATION]: JSON.stringify(recorded) } : {}),
    };
    return p;
  }

  it("keeps the recorded pull error: nothing crashed", () => {
    expect(buildStatusDetail(stalled({ ...pullError, lastUpdatedTime: AT }), NOW)).toEqual({
      ...pullError,
      lastUpdatedTime: AT,
    });
  });

  it("is a CrashLoopBackOff without a recorded pull error, or a garbled one", () => {
    for (const p of [stalled(), stalled({ reason: "Pulling", message: "m" })]) {
      expect(buildStatusDetail(p, NOW)?.reason).toBe("CrashLoopBackOff");
    }
    const garbled = stalled();
    garbled.metadata!.annotations![SANDBOX_STATUS_DETAIL_ANNOTATION] = "{";
    expect(buildStatusDetail(garbled, NOW)?.reason).toBe("CrashLoopBackOff");
  });

  it("is a CrashLoopBackOff once the target ran and crashed (a new container id)", () => {
    expect(buildStatusDetail(stalled({ ...pullError, lastUpdatedTime: AT }, "c-older"), NOW)?.reason).toBe(
      "CrashLoopBackOff",
    );
  });
});

describe("withWarningEvents", () => {
  const detail = { reason: "ImagePullBackOff", message: "m", lastUpdatedTime: AT };
  const target = pod("starting", []);
  const event = (name: string, over: Partial<CoreV1Event>): CoreV1Event => ({
    metadata: { name, namespace: "ns" },
    involvedObject: { kind: "Pod", name: "p1", namespace: "ns", uid: "uid-1" },
    type: "Warning",
    reason: name,
    message: `${name} happened`,
    ...over,
  });
  const events: CoreV1Event[] = [
    event("Old", { lastTimestamp: new Date("2026-05-10T11:00:00Z"), count: 1 }),
    event("Newest", { lastTimestamp: "2026-05-10T11:59:00Z" as unknown as Date, count: 7 }),
    event("Series", { eventTime: new Date("2026-05-10T11:30:00.123456Z"), series: { count: 3 } }),
    event("Untimed", {}),
    event("Normal", { type: "Normal", lastTimestamp: new Date("2026-05-10T11:58:00Z") }),
    event("OtherPod", { involvedObject: { kind: "Pod", name: "p2", namespace: "ns" } }),
    event("OtherNamespace", { involvedObject: { kind: "Pod", name: "p1", namespace: "other" } }),
    event("PreviousPodSameName", {
      involvedObject: { kind: "Pod", name: "p1", namespace: "ns", uid: "uid-0" },
    }),
    event("NotAPod", { involvedObject: { kind: "Node", name: "p1" } }),
  ];

  it("attaches only this pod's Warning events, newest first", () => {
    expect(withWarningEvents(detail, target, events)).toEqual({
      ...detail,
      events: [
        { reason: "Newest", message: "Newest happened", lastTimestamp: "2026-05-10T11:59:00Z", count: 7 },
        { reason: "Series", message: "Series happened", lastTimestamp: "2026-05-10T11:30:00Z", count: 3 },
        { reason: "Old", message: "Old happened", lastTimestamp: "2026-05-10T11:00:00Z", count: 1 },
        { reason: "Untimed", message: "Untimed happened", lastTimestamp: "", count: 1 },
      ],
    });
  });

  it("no events: an empty list", () => {
    expect(withWarningEvents(detail, target, [])).toEqual({ ...detail, events: [] });
  });

  it("drops events from before the sandbox's claim: a pooled pod keeps its name and uid", () => {
    const since = new Date("2026-05-10T11:15:00Z");
    expect(withWarningEvents(detail, target, events, since).events.map((e) => e.reason)).toEqual([
      "Newest",
      "Series",
      "Untimed",
    ]);
  });
});
