import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { type HostDeps, hostDeps } from "../../functions/host-deps.ts";
import { idleRelease } from "../../functions/steps/idle-release.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { KubeClient } from "../../lib/kube/client.ts";
import { planIdleRelease } from "../../lib/reconcile/idle-release.ts";

// The idle-release planner with a pulled activity source's answer, and the step's handling of a
// source that fails, on plain objects with a fixed clock.

const NOW = new Date("2026-11-21T12:00:00Z");
const IDLE = { idleImages: { main: "idle:1" } };
const LAST_ACTIVE = "agentbox.navix.sh/last-active";

function running(id: string, annotations: Record<string, string> = {}, phase = "running"): V1Pod {
  return {
    metadata: {
      name: `pod-${id}`,
      namespace: "ns",
      uid: `${id}-uid`,
      resourceVersion: "7",
      labels: {
        "agentbox.navix.sh/sandbox-pool": "p",
        "agentbox.navix.sh/sandbox-phase": phase,
        "agentbox.navix.sh/sandbox-id": id,
      },
      annotations: {
        "agentbox.navix.sh/sandbox-id": id,
        "agentbox.navix.sh/claimed-at": "2026-11-21T11:00:00Z",
        "agentbox.navix.sh/started-at": "2026-11-21T11:00:05Z",
        "agentbox.navix.sh/idle-timeout": "600",
        ...annotations,
      },
    },
    spec: { containers: [{ name: "main", image: "agent:1" }] },
    status: {
      phase: "Running",
      containerStatuses: [
        {
          name: "main",
          image: "agent:1",
          imageID: "agent@sha256:1",
          containerID: "c2",
          ready: true,
          restartCount: 1,
          state: { running: {} },
        },
      ],
    },
  } as V1Pod;
}

const pulled = (entries: Record<string, string>) =>
  new Map(Object.entries(entries).map(([id, at]) => [id, new Date(at)]));
const whys = (actions: { why: string }[]) => actions.map((a) => a.why);

describe("planIdleRelease with a pulled activity source", () => {
  it("a recent pulled time keeps a sandbox alive and is persisted under resourceVersion and id tests", () => {
    const pod = running("sbx-a", { [LAST_ACTIVE]: "2026-11-21T11:40:00Z" });
    expect(whys(planIdleRelease([pod], IDLE, NOW))).toEqual([
      "release idle sandbox: idle for 1200 s (idle timeout 600 s)",
    ]);
    const actions = planIdleRelease([pod], IDLE, NOW, pulled({ "sbx-a": "2026-11-21T11:59:30.700Z" }));
    expect(actions).toEqual([
      {
        target: { kind: "Pod", namespace: "ns", name: "pod-sbx-a" },
        why: "record pulled activity: last active 2026-11-21T11:59:30Z",
        write: {
          op: "patch",
          patch: [
            { op: "test", path: "/metadata/resourceVersion", value: "7" },
            { op: "test", path: "/metadata/labels/agentbox.navix.sh~1sandbox-id", value: "sbx-a" },
            {
              op: "add",
              path: "/metadata/annotations/agentbox.navix.sh~1last-active",
              value: "2026-11-21T11:59:30Z",
            },
          ],
        },
      },
    ]);
  });

  it("ignores a pulled time older than the annotation (no write, the annotation decides)", () => {
    const fresh = running("sbx-a", { [LAST_ACTIVE]: "2026-11-21T11:58:00Z" });
    expect(planIdleRelease([fresh], IDLE, NOW, pulled({ "sbx-a": "2026-11-21T11:00:00Z" }))).toEqual([]);
    const stale = running("sbx-b", { [LAST_ACTIVE]: "2026-11-21T11:45:00Z" });
    expect(whys(planIdleRelease([stale], IDLE, NOW, pulled({ "sbx-b": "2026-11-21T11:30:00Z" })))).toEqual([
      "release idle sandbox: idle for 900 s (idle timeout 600 s)",
    ]);
  });

  it("asks a throttle more of a sandbox whose written last-active decides: it may lag its traffic", () => {
    // Idle timeout 600 s: a fifth is 120 s, capped at 30 s: the annotation may be 30 s late.
    const written = (at: string) => running("sbx-a", { [LAST_ACTIVE]: at });
    expect(planIdleRelease([written("2026-11-21T11:49:59Z")], IDLE, NOW)).toEqual([]); // 601 s
    expect(planIdleRelease([written("2026-11-21T11:49:30Z")], IDLE, NOW)).toEqual([]); // 630 s
    expect(whys(planIdleRelease([written("2026-11-21T11:49:29Z")], IDLE, NOW))).toEqual([
      "release idle sandbox: idle for 631 s (idle timeout 600 s)",
    ]);
    // Untouched since its start (nothing written since): the timeout alone.
    const untouched = running("sbx-b", {
      "agentbox.navix.sh/started-at": "2026-11-21T11:49:59Z",
      [LAST_ACTIVE]: "2026-11-21T11:49:59Z",
    });
    expect(whys(planIdleRelease([untouched], IDLE, NOW))).toEqual([
      "release idle sandbox: idle for 601 s (idle timeout 600 s)",
    ]);
    // A pulled time (this host's own router, exact) that decides needs no more.
    expect(
      whys(
        planIdleRelease(
          [written("2026-11-21T11:30:00Z")],
          IDLE,
          NOW,
          pulled({ "sbx-a": "2026-11-21T11:49:59Z" }),
        ),
      ),
    ).toEqual(["release idle sandbox: idle for 601 s (idle timeout 600 s)"]);
  });

  it("throttles persists like the push path: only a time 30 s past the annotation is written", () => {
    const pod = running("sbx-a", { [LAST_ACTIVE]: "2026-11-21T11:59:00Z" });
    expect(planIdleRelease([pod], IDLE, NOW, pulled({ "sbx-a": "2026-11-21T11:59:29Z" }))).toEqual([]);
    expect(whys(planIdleRelease([pod], IDLE, NOW, pulled({ "sbx-a": "2026-11-21T11:59:30Z" })))).toEqual([
      "record pulled activity: last active 2026-11-21T11:59:30Z",
    ]);
    // Without an annotation the first pulled time is written, adding the map when there is none.
    const bare = running("sbx-c");
    bare.metadata!.annotations = undefined;
    const [action] = planIdleRelease([bare], IDLE, NOW, pulled({ "sbx-c": "2026-11-21T11:59:00Z" }));
    expect(action?.write).toMatchObject({
      patch: [
        {},
        {},
        { op: "add", path: "/metadata/annotations", value: { [LAST_ACTIVE]: "2026-11-21T11:59:00Z" } },
      ],
    });
  });

  it("releases sandboxes the source is silent about, and persists without a timeout too", () => {
    const pods = [
      running("sbx-silent", { [LAST_ACTIVE]: "2026-11-21T11:40:00Z" }),
      running("sbx-forever", { "agentbox.navix.sh/idle-timeout": "" }),
    ];
    expect(whys(planIdleRelease(pods, IDLE, NOW, pulled({ "sbx-forever": "2026-11-21T11:59:00Z" })))).toEqual(
      [
        "release idle sandbox: idle for 1200 s (idle timeout 600 s)",
        "record pulled activity: last active 2026-11-21T11:59:00Z",
      ],
    );
    // An empty answer changes nothing against today's plan.
    expect(planIdleRelease(pods, IDLE, NOW, new Map())).toEqual(planIdleRelease(pods, IDLE, NOW));
  });

  it("a release in the same pass gets no persist; pods not running get neither", () => {
    const idle = running("sbx-a", { [LAST_ACTIVE]: "2026-11-21T11:00:00Z" });
    expect(whys(planIdleRelease([idle], IDLE, NOW, pulled({ "sbx-a": "2026-11-21T11:49:00Z" })))).toEqual([
      "release idle sandbox: idle for 660 s (idle timeout 600 s)",
    ]);
    const stopping = running("sbx-s", {}, "stopping");
    const deleting = running("sbx-d");
    deleting.metadata!.deletionTimestamp = new Date("2026-11-21T11:59:00Z");
    const recent = pulled({ "sbx-s": "2026-11-21T11:59:00Z", "sbx-d": "2026-11-21T11:59:00Z" });
    expect(planIdleRelease([stopping, deleting], IDLE, NOW, recent)).toEqual([]);
  });
});

describe("the idle-release step", () => {
  const pool = {
    apiVersion: "agents.navix.sh/v1alpha1",
    kind: "SandboxPool",
    metadata: { name: "p", namespace: "ns" },
    spec: {
      replicas: 1,
      podCreationImagePolicy: "IdleImage",
      idleImage: "idle:1",
      template: { spec: { containers: [{ name: "main", image: "base:1" }] } },
    },
  } as SandboxPool;

  function deps(pullActivity?: HostDeps["pullActivity"]) {
    const warnings: string[] = [];
    const d: HostDeps = hostDeps({
      watch: async () => {
        throw new Error("planning must not watch");
      },
      kube: new KubeClient(async () => {
        throw new Error("planning must not call the API server");
      }),
      history: {
        put: async () => "inserted",
        get: async () => undefined,
        query: async () => ({ records: [] }),
        putEvent: async () => "inserted",
        events: async () => [],
      },
      now: () => NOW,
      log: {
        debug() {},
        info() {},
        error() {},
        warn: (obj, msg) => warnings.push(`${msg} ${JSON.stringify(obj)}`),
      },
      digests: { resolve: async () => undefined },
      reporter: { controller: "c", instance: "i" },
      ...(pullActivity ? { pullActivity } : {}),
    });
    return { d, warnings };
  }

  const idlePod = () => running("sbx-a", { [LAST_ACTIVE]: "2026-11-21T11:00:00Z" });

  it("plans nothing when the source fails, and says so without the token", async () => {
    const { d, warnings } = deps(async () => {
      throw new Error("activity source answered HTTP 500");
    });
    expect(await idleRelease.plan(d, { pool, pods: [idlePod()] })).toEqual([]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain("HTTP 500");
    expect(warnings[0]).toContain("ns/p");
  });

  it("without a source releases only sandboxes with reported activity, saying once why the others stay", async () => {
    const { d, warnings } = deps();
    d.noticed = new Set();
    // idlePod has no activity reported since its start: in the default mode (reported) it stays.
    expect(await idleRelease.plan(d, { pool, pods: [idlePod()] })).toEqual([]);
    expect(await idleRelease.plan(d, { pool, pods: [idlePod()] })).toEqual([]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/no reported activity, so they are not released/);
    // since-start counts from the start; off releases nothing.
    expect(
      whys(await idleRelease.plan({ ...d, idleRelease: "since-start" }, { pool, pods: [idlePod()] })),
    ).toEqual(["release idle sandbox: idle for 3595 s (idle timeout 600 s)"]);
    expect(await idleRelease.plan({ ...d, idleRelease: "off" }, { pool, pods: [idlePod()] })).toEqual([]);
  });

  it("with no running sandbox never pulls", async () => {
    let pulls = 0;
    const { d } = deps(async () => {
      pulls++;
      return new Map();
    });
    expect(await idleRelease.plan(d, { pool, pods: [running("sbx-i", {}, "idle")] })).toEqual([]);
    expect(pulls).toBe(0);
    expect(whys(await idleRelease.plan(d, { pool, pods: [idlePod()] }))).toHaveLength(1);
    expect(pulls).toBe(1);
  });
});
