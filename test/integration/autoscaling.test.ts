import { randomBytes } from "node:crypto";
import type { V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { claimSandbox } from "../../functions/claim-sandbox.ts";
import { reconcileEnv } from "../../functions/runs/reconcile-env.ts";
import { LAST_SANDBOX_CREATE_TIME_ANNOTATION } from "../../lib/crd/keys.ts";
import type { SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { memberReplicas } from "../../lib/membership/env-members.ts";
import {
  encodeMark,
  PENDING_REQUESTS_PREFIX,
  SERVED_MARK_ANNOTATION,
  servedMark,
} from "../../lib/pool/pending-requests.ts";
import { rfc3339 } from "../../lib/util/time.ts";
import { autoscalingGroup, type GroupOptions } from "../support/autoscaling-group.ts";
import { ENVS, envObject, eventsAbout, TEMPLATES, templateObject, tickUntil } from "./support/envs.ts";
import { kube, newNamespace } from "./support/kube.ts";
import { isReady, live, POOLS, phaseOf, poolTest } from "./support/steps.ts";

// The autoscaler on the real control plane: Env runs (reconcileEnv, and the tick) read the member
// pools and their Pods, write member replicas on the Env and bookkeeping on the pools; the pool
// steps create and remove the Pods. Demand is published the way hosts publish it (the pool's
// pending-requests and last-sandbox-create-time annotations); time jumps through the deps' clock.

const { core, custom } = kube();
const t = poolTest("autoscale");
const { deps, pods } = t;
const template = `as-tmpl-${randomBytes(3).toString("hex")}`;

beforeAll(async () => {
  await custom.createClusterCustomObject({
    ...TEMPLATES,
    body: templateObject(template, "v1", "registry.local/sandbox/python:3.12"),
  });
});
afterAll(async () => {
  await custom.deleteClusterCustomObject({ ...TEMPLATES, name: template }).catch(() => {});
});
// Each test jumps the clock for its own Env; the next one starts from real time again.
beforeEach(() => {
  deps.clock.offsetMs = 0;
});

/** group is the shared test group, with quick scale-down (60 s idle, 2 s protection window). */
const group = (o: GroupOptions = {}) =>
  autoscalingGroup({ ...o, down: { idleTimeoutSeconds: 60, protectionWindowSeconds: 2, ...o.down } });

const member = (name: string, config: Record<string, unknown> = {}, replicas?: number) => ({
  name,
  ...(replicas !== undefined ? { spec: { replicas } } : {}),
  config: { scalingGroup: "default", ...config },
});

async function createEnv(name: string, members: unknown[], groups: unknown[], ns = t.ns) {
  await custom.createNamespacedCustomObject({
    ...ENVS,
    namespace: ns,
    body: envObject(ns, name, template, members as Record<string, unknown>[], { autoscaling: { groups } }),
  });
}
const getEnv = async (name: string, ns = t.ns) =>
  (await custom.getNamespacedCustomObject({ ...ENVS, namespace: ns, name })) as SandboxEnv;
const getPool = async (name: string, ns = t.ns) =>
  (await custom.getNamespacedCustomObject({ ...POOLS, namespace: ns, name })) as SandboxPool;
/** replicasOf is a member's replicas as the Env says (memberReplicas: spec.replicas, else its minimum). */
const replicasOf = async (env: string, m: string, ns = t.ns) => {
  const found = (await getEnv(env, ns)).spec.clusters?.[0]?.members?.find((x) => x.name === m);
  return found && memberReplicas(found);
};
const annotate = (pool: string, annotations: Record<string, string>, ns = t.ns) =>
  deps.kube.setPoolAnnotations(ns, pool, annotations);
/** waiting publishes `count` creates waiting on the pool, as a host's PendingGauge does. */
const waiting = (pool: string, count: number, ns = t.ns) =>
  annotate(pool, { [`${PENDING_REQUESTS_PREFIX}test`]: encodeMark({ count, at: deps.now() }) }, ns);
/** created stamps a sandbox create on the pool now, as the API does. */
const created = (pool: string) =>
  annotate(pool, { [LAST_SANDBOX_CREATE_TIME_ANNOTATION]: rfc3339(deps.now()) });
const run = (env: string, ns = t.ns) => reconcileEnv(deps, ns, env);
/** untilPool ticks until the member pool exists with a status (the Env materialised it). */
const untilPool = (pool: string) =>
  tickUntil(
    deps,
    t.ns,
    `the member pool ${pool}`,
    async () => (await getPool(pool).catch(() => undefined))?.status,
  );
const idleReady = (ps: V1Pod[]) => live(ps).filter((p) => phaseOf(p) === "idle" && isReady(p));
/** untilIdle ticks until the pool has `n` pods (`idle` of them idle and ready, all by default). */
const untilIdle = (pool: string, n: number, ns = t.ns, idle = n) =>
  tickUntil(deps, ns, `${idle} idle of ${n} pod(s) in ${pool}`, async () => {
    const ps = ns === t.ns ? await pods(pool) : await podsIn(ns, pool);
    return live(ps).length === n && idleReady(ps).length === idle && ps;
  }).then((ps) => ps as V1Pod[]);
const podsIn = async (namespace: string, pool: string) =>
  (await core.listNamespacedPod({ namespace, labelSelector: `agentbox.navix.sh/sandbox-pool=${pool}` }))
    .items;
const claim = (pod: V1Pod) =>
  claimSandbox(deps, pod, {
    sandboxId: `sb-${randomBytes(4).toString("hex")}`,
    containerImages: { sandbox: "registry.local/sandbox/agent:1" },
  });
const jump = (seconds: number) => {
  deps.clock.offsetMs += seconds * 1000;
};

describe("autoscaler: scale-up triggers", () => {
  it("reactive: waiting creates grow their member in one run, past the cooldown, never twice for the same demand", async () => {
    await createEnv("react", [member("react-a")], [group()]);
    await untilPool("react-a");
    await waiting("react-a", 3);
    await run("react");
    // Default growth on 0 is 1; three creates wait: the demand wins. The same run stamps the pool.
    expect(await replicasOf("react", "react-a")).toBe(3);
    const pool = await getPool("react-a");
    expect(pool.spec.replicas).toBe(3);
    expect(pool.status?.autoscaling).toMatchObject({
      lastScaleUpAttemptResult: "Enough",
      lastScaleUpTime: expect.any(String),
      observedGeneration: expect.any(Number),
    });
    const firstUp = pool.status?.autoscaling?.lastScaleUpTime;
    await run("react"); // the three ordered pods serve the three waiting creates
    expect(await replicasOf("react", "react-a")).toBe(3);
    jump(2); // within the 30 s cooldown, more creates wait: reactive ignores the cooldown
    await waiting("react-a", 5);
    await run("react");
    expect(await replicasOf("react", "react-a")).toBe(5);
    expect((await getPool("react-a")).status?.autoscaling?.lastScaleUpTime).not.toBe(firstUp);
    await untilIdle("react-a", 5);
    const events = await eventsAbout(core, t.ns, "react");
    expect(events.filter((e) => e.reason === "ScaledUp").map((e) => e.message)).toEqual([
      "autoscaler: react-a 0→3 (default: Reactive)",
      "autoscaler: react-a 3→5 (default: Reactive)",
    ]);
    // The same two decisions in the autoscaler's counter (the metric operators alert on).
    const decisions = (await t.deps.metrics?.autoscalerDecisions.get())?.values ?? [];
    expect(decisions.find((v) => v.labels.direction === "up" && v.labels.reason === "Reactive")?.value).toBe(
      2,
    );
  });

  it("idle-zero: grows after idleThresholdSeconds without an idle pod, gated by the quiet window and the cooldown", async () => {
    await createEnv("proact", [member("proact-a", {}, 1)], [group({ up: { cooldownSeconds: 120 } })]);
    const [pod] = await untilIdle("proact-a", 1);
    expect((await claim(pod as V1Pod)).ok).toBe(true);
    await run("proact");
    const since = (await getPool("proact-a")).status?.autoscaling?.idleZeroSince;
    expect(since).toBeDefined();
    jump(31);
    await run("proact"); // idle zero for 31 s, but no create was ever seen: the quiet window holds it
    expect(await replicasOf("proact", "proact-a")).toBe(1);
    await created("proact-a");
    await run("proact");
    expect(await replicasOf("proact", "proact-a")).toBe(2);
    expect((await eventsAbout(core, t.ns, "proact")).map((e) => e.message)).toContain(
      "autoscaler: proact-a 1→2 (default: IdleZero)",
    );
    // The new pod is claimed as well: idle is zero again, creates keep coming, but the 120 s
    // cooldown since the last scale-up holds the next one back until it has passed.
    const fresh = idleReady(await untilIdle("proact-a", 2, t.ns, 1));
    expect((await claim(fresh[0] as V1Pod)).ok).toBe(true);
    await run("proact");
    jump(31);
    await created("proact-a");
    await run("proact");
    expect(await replicasOf("proact", "proact-a")).toBe(2);
    jump(90);
    await created("proact-a");
    await run("proact");
    expect(await replicasOf("proact", "proact-a")).toBe(3);
  });
});

describe("autoscaler: saturation", () => {
  it("a pod create refused for quota saturates the member: not grown, shown Saturated, its share goes to the next", async () => {
    const { ns, cleanup } = await newNamespace(core, "asq");
    try {
      await core.createNamespacedResourceQuota({
        namespace: ns,
        body: { metadata: { name: "pods" }, spec: { hard: { pods: "2" } } },
      });
      await createEnv(
        "quota",
        [member("q1", { priority: 0 }, 2), member("q2", { priority: 1 }, 0)],
        [group()],
        ns,
      );
      await untilIdle("q1", 2, ns);
      await waiting("q1", 5, ns);
      await run("quota", ns); // 3 unmet; no refusal yet, so q1 grows, and its new pods are refused
      expect(await replicasOf("quota", "q1", ns)).toBe(5);
      await tickUntil(deps, ns, "q1's pod creates refused for quota", async () => {
        const failure = (await getPool("q1", ns)).status?.conditions?.find(
          (c) => c.type === "ReplicaFailure",
        );
        return failure?.reason === "FailedCreate" && /exceeded quota/.test(failure.message ?? "");
      });
      // The same five still wait: q1's refused replicas will never serve them, so the next run
      // tries again, finds q1 saturated, and q2 takes all three.
      await run("quota", ns);
      const q1 = (await getPool("q1", ns)).status?.autoscaling;
      expect(q1).toMatchObject({ lastScaleUpAttemptResult: "Insufficient" });
      expect(q1?.scaleUpErrorMessage).toMatch(/^pod create refused for quota: .*exceeded quota/);
      expect(await replicasOf("quota", "q1", ns)).toBe(5);
      expect(await replicasOf("quota", "q2", ns)).toBe(3);
      await run("quota", ns);
      const observed = (await getEnv("quota", ns)).status?.clusters?.[0]?.observedMembers?.find(
        (m) => m.name === "q1",
      );
      const attempt = Date.parse(q1?.lastScaleUpAttemptTime ?? "");
      expect(observed).toMatchObject({ state: "Saturated" });
      expect(Date.parse(observed?.saturatedUntil ?? "")).toBe(attempt + 60_000);
      expect((await eventsAbout(core, ns, "q1")).map((e) => e.reason)).toContain("ScaleUpInsufficient");
      // The Env says so once, when q1 turned Saturated.
      expect(
        (await eventsAbout(core, ns, "quota")).filter((e) => e.reason === "Saturated").map((e) => e.message),
      ).toEqual(["member(s) saturated, held back from routing and growth: q1"]);
    } finally {
      await cleanup();
    }
  });

  it("pods Pending as Unschedulable saturate the member", async () => {
    const huge = { requests: { cpu: "100000", memory: "256Mi" } };
    await createEnv("unsched", [member("u1", { inlineResources: huge }, 1)], [group()]);
    await tickUntil(deps, t.ns, "the pod Pending as Unschedulable", async () =>
      (await pods("u1")).some((p) =>
        p.status?.conditions?.some((c) => c.type === "PodScheduled" && c.reason === "Unschedulable"),
      ),
    );
    await waiting("u1", 2);
    await run("unsched");
    expect(await replicasOf("unsched", "u1")).toBe(1);
    expect((await getPool("u1")).status?.autoscaling).toMatchObject({
      lastScaleUpAttemptResult: "Insufficient",
      scaleUpErrorMessage: expect.stringMatching(/^1 pod\(s\) Pending as Unschedulable: /),
    });
  });
});

describe("autoscaler: scale-down", () => {
  it("removes only pods idle for idleTimeoutSeconds, keeps stabilizationSeconds between scale-downs, and deletes them", async () => {
    await createEnv("down", [member("down-a", {}, 3)], [group({ minReplicas: 2 })]);
    await untilIdle("down-a", 3);
    await run("down");
    expect(await replicasOf("down", "down-a")).toBe(3); // idle for less than 60 s
    jump(61);
    await run("down");
    expect(await replicasOf("down", "down-a")).toBe(2); // the group's minimum
    const lastDown = (await getPool("down-a")).status?.autoscaling?.lastScaleDownTime;
    expect(lastDown).toBeDefined();
    await custom.patchNamespacedCustomObject({
      ...ENVS,
      namespace: t.ns,
      name: "down",
      body: [{ op: "replace", path: "/spec/autoscaling/groups/0/minReplicas", value: 0 }],
    });
    await run("down");
    expect(await replicasOf("down", "down-a")).toBe(2); // stabilization: 60 s since the last one
    jump(60);
    await run("down");
    expect(await replicasOf("down", "down-a")).toBe(0);
    jump(3); // past the protection window of the marked pods
    await tickUntil(
      deps,
      t.ns,
      "every pod of down-a removed",
      async () => live(await pods("down-a")).length === 0,
    );
  });
});

describe("autoscaler: bounds and order", () => {
  it("raises the group to its minimum by scale-up priority, shrinks the highest scale-down priority first", async () => {
    await createEnv(
      "order",
      [
        member("o-b", { priority: 1 }),
        member("o-a", { priority: 0, maxReplicas: 2 }),
        member("o-c", { priority: 2 }),
      ],
      [group({ minReplicas: 3 })],
    );
    await tickUntil(
      deps,
      t.ns,
      "the group at its minimum",
      async () => (await replicasOf("order", "o-b")) === 1,
    );
    expect(await replicasOf("order", "o-a")).toBe(2);
    expect(await replicasOf("order", "o-c")).toBe(0);
    await untilIdle("o-a", 2);
    await untilIdle("o-b", 1);
    await custom.patchNamespacedCustomObject({
      ...ENVS,
      namespace: t.ns,
      name: "order",
      body: [{ op: "replace", path: "/spec/autoscaling/groups/0/minReplicas", value: 1 }],
    });
    jump(61);
    await run("order");
    expect(await replicasOf("order", "o-b")).toBe(0); // priority 1 shrinks before priority 0
    expect(await replicasOf("order", "o-a")).toBe(1);
  });

  it("never touches a disabled group, and keeps status.autoscaling off its pools", async () => {
    await createEnv("off", [member("off-a", {}, 1)], [group({ enabled: false, minReplicas: 3 })]);
    await untilIdle("off-a", 1);
    await waiting("off-a", 4);
    await run("off");
    expect(await replicasOf("off", "off-a")).toBe(1);
    expect((await getPool("off-a")).status?.autoscaling).toBeUndefined();
    expect(
      (await getEnv("off")).status?.conditions?.find((c) => c.type === "AutoscalingActive"),
    ).toMatchObject({
      status: "False",
      reason: "AutoscalingDisabled",
    });
  });
});

describe("autoscaler: concurrency", () => {
  it("concurrent runs on the same demand take the step once", async () => {
    await createEnv("race", [member("race-a")], [group()]);
    await untilPool("race-a");
    await waiting("race-a", 2);
    const reports = await Promise.all([run("race"), run("race"), run("race"), run("race")]);
    expect(await replicasOf("race", "race-a")).toBe(2);
    const envWrites = reports
      .flatMap((r) => r.outcomes)
      .filter((o) => o.target === `SandboxEnv/${t.ns}/race` && o.op === "patch");
    expect(envWrites.filter((o) => o.result === "done")).toHaveLength(1);
    const scaled = (await eventsAbout(core, t.ns, "race")).filter((e) => e.reason === "ScaledUp");
    expect(scaled).toHaveLength(1);
  });
});

describe("autoscaler: a mark that still counts waiters already served", () => {
  it("does not grow again for them: their claims name the mark, and the autoscaler takes them off", async () => {
    await createEnv("served", [member("served-a")], [group()]);
    await untilPool("served-a");
    const key = `${PENDING_REQUESTS_PREFIX}test`;
    const mark = encodeMark({ count: 3, at: deps.now() });
    await annotate("served-a", { [key]: mark });
    await run("served");
    expect(await replicasOf("served", "served-a")).toBe(3);
    // The three pods come; the three waiting creates claim them, naming the mark that counted
    // them. The host's mark is rewritten at most once a second: it still says 3.
    const idle = await untilIdle("served-a", 3);
    for (const pod of idle) {
      const claimed = await claimSandbox(deps, pod, {
        sandboxId: `sb-${randomBytes(4).toString("hex")}`,
        containerImages: { sandbox: "registry.local/sandbox/agent:1" },
        annotations: { [SERVED_MARK_ANNOTATION]: servedMark("served-a", key, mark) },
      });
      expect(claimed.ok).toBe(true);
    }
    await run("served");
    expect(await replicasOf("served", "served-a")).toBe(3);
    // The host's next mark counts only creates waiting when it was written: all of it is demand.
    await annotate("served-a", { [key]: encodeMark({ count: 4, at: deps.now() }) });
    await run("served");
    expect(await replicasOf("served", "served-a")).toBe(7);
  });
});

describe("autoscaler: a run that loses its bookkeeping", () => {
  it("keeps the cooldown: the group's last scale-up rides in the Env patch, not only in the pools", async () => {
    await createEnv("lost", [member("lost-a")], [group({ up: { idleThresholdSeconds: 5 } })]);
    await untilPool("lost-a");
    await waiting("lost-a", 1);
    await run("lost");
    expect(await replicasOf("lost", "lost-a")).toBe(1);
    // The pool's bookkeeping is lost (a crash after the Env patch, or a racing run's write landed
    // first), the one pod is claimed, and creates keep coming with no idle pod for 10 s.
    await custom.patchNamespacedCustomObjectStatus({
      ...POOLS,
      namespace: t.ns,
      name: "lost-a",
      body: [{ op: "remove", path: "/status/autoscaling" }],
    });
    const [pod] = await untilIdle("lost-a", 1);
    expect((await claim(pod as V1Pod)).ok).toBe(true);
    await waiting("lost-a", 0);
    await created("lost-a");
    await run("lost"); // idleZeroSince starts
    jump(10);
    await created("lost-a");
    await run("lost");
    // Idle zero for 10 s with creates coming: proactive growth is due but for the 30 s cooldown,
    // which the Env's stamp still holds although the pool no longer says when it scaled.
    expect(await replicasOf("lost", "lost-a")).toBe(1);
    expect((await getEnv("lost")).metadata?.annotations?.["autoscaler.agentbox.navix.sh/last-scale"]).toMatch(
      /"lastScaleUpTime"/,
    );
    jump(21);
    await created("lost-a");
    await run("lost");
    expect(await replicasOf("lost", "lost-a")).toBe(2);
  });
});
