import { describe, expect, it } from "vitest";
import type { Condition } from "../../lib/crd/common.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import type { SandboxTemplate } from "../../lib/crd/sandbox-template.ts";
import { revisionAnnotations, revisionOf } from "../../lib/env/member-revision.ts";
import { envOwnerReference } from "../../lib/membership/env-ownership.ts";
import { REPLICA_FAILURE } from "../../lib/pool/pool-status.ts";
import { copyTemplate } from "../../lib/pool/template-copy.ts";
import {
  planTemplateStatus,
  TEMPLATE_REASON,
  templateConditions,
} from "../../lib/template/template-status.ts";

// A SandboxTemplate's Available / Progressing / Degraded (issue #26) on plain data: what each
// reason needs, which pools count (the template's own, at its revision), and the one write.

const NOW = new Date("2026-11-26T12:00:00Z");
const TEMPLATE: SandboxTemplate = {
  metadata: { name: "python", resourceVersion: "7", generation: 2 },
  spec: { version: "v2", template: { spec: { containers: [{ name: "main", image: "py:2" }] } } },
};

interface PoolOptions {
  replicas?: number;
  status?: SandboxPool["status"];
  /** from: the template the pool's copy was made from (default TEMPLATE: at its revision). */
  from?: SandboxTemplate;
  templateName?: string;
  generation?: number;
}

/** pool is a standalone pool created from a template, its copy made as the webhook makes it. */
function pool(name: string, o: PoolOptions = {}): SandboxPool {
  const base: SandboxPool = {
    metadata: { name, namespace: "ns", generation: o.generation ?? 1 },
    spec: { replicas: o.replicas ?? 1, templateName: o.templateName ?? "python" } as SandboxPool["spec"],
  };
  const copy = copyTemplate(base, o.from ?? TEMPLATE);
  return {
    ...base,
    metadata: { ...base.metadata, labels: copy.labels, annotations: copy.annotations },
    spec: { ...base.spec, ...copy.embedded },
    ...(o.status ? { status: o.status } : {}),
  };
}

/** status is a pool status computed at `generation`, counting `idle` (of them `unready`) and `running`. */
function status(o: {
  idle?: number;
  unready?: number;
  running?: number;
  generation?: number;
  failure?: string;
}) {
  const conditions: Condition[] = [
    {
      type: "Available",
      status: "True",
      reason: "IdlePodsAvailable",
      message: "",
      lastTransitionTime: "2026-11-26T11:00:00Z",
      observedGeneration: o.generation ?? 1,
    },
    ...(o.failure
      ? [
          {
            type: REPLICA_FAILURE,
            status: "True" as const,
            reason: "FailedCreate",
            message: o.failure,
            lastTransitionTime: "2026-11-26T11:00:00Z",
            observedGeneration: o.generation ?? 1,
          },
        ]
      : []),
  ];
  return {
    idleReplicas: o.idle ?? 0,
    unavailableIdleReplicas: o.unready ?? 0,
    runningReplicas: o.running ?? 0,
    conditions,
  };
}

const byType = (template: SandboxTemplate, pools: SandboxPool[]) =>
  Object.fromEntries(templateConditions(template, pools).map((c) => [c.type, c]));
const summary = (template: SandboxTemplate, pools: SandboxPool[]) =>
  templateConditions(template, pools).map((c) => `${c.type}=${c.status}/${c.reason}`);
const INVALID = 'Pod "x" is invalid: spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes"';

describe("templateConditions", () => {
  it("a template no pool uses is Available as soon as it renders pods", () => {
    expect(summary(TEMPLATE, [])).toEqual([
      "Available=True/NoPools",
      "Progressing=False/NoPools",
      "Degraded=False/RendersPods",
    ]);
  });

  it("a pod template that cannot become a Pod is Degraded (InvalidPodTemplate), and not Available", () => {
    const broken = { ...TEMPLATE, spec: { ...TEMPLATE.spec, template: { spec: { containers: [] } } } };
    const c = byType(broken, []);
    expect(c.Degraded).toMatchObject({ status: "True", reason: TEMPLATE_REASON.INVALID_POD_TEMPLATE });
    expect(c.Degraded?.message).toMatch(
      /^pods cannot be rendered: spec\.template\.spec\.containers: must list/,
    );
    expect(c.Available).toMatchObject({ status: "False", reason: TEMPLATE_REASON.INVALID_POD_TEMPLATE });
  });

  it("a pool at its revision whose pods the apiserver refuses makes it Degraded (PodsRefused), naming the pool", () => {
    const refused = pool("web", { status: status({ failure: INVALID }) });
    const c = byType(TEMPLATE, [refused]);
    expect(c.Degraded).toMatchObject({ status: "True", reason: TEMPLATE_REASON.PODS_REFUSED });
    expect(c.Degraded?.message).toBe(`pods rendered from it are refused: ns/web: FailedCreate: ${INVALID}`);
    expect(c.Available).toMatchObject({ status: "False", reason: TEMPLATE_REASON.PODS_REFUSED });
    // Its missing pod is not "on its way": the refusal is the Degraded condition's.
    expect(c.Progressing).toMatchObject({ status: "False", reason: TEMPLATE_REASON.POOLS_SETTLED });
  });

  it.each<[string, SandboxPool]>([
    [
      "a quota refusal (the cluster's limit, not the template's)",
      pool("q", { status: status({ failure: 'pods "q-0" is forbidden: exceeded quota: small' }) }),
    ],
    [
      "a pool still on an older copy (not refreshed since the template changed)",
      pool("old", {
        from: {
          ...TEMPLATE,
          spec: {
            ...TEMPLATE.spec,
            template: {
              spec: { containers: [{ name: "main", image: "py:1", imagePullPolicy: "Sometimes" }] },
            },
          },
        },
        status: status({ failure: INVALID }),
      }),
    ],
    [
      "a refusal recorded before the pool's latest spec",
      pool("re", { generation: 2, status: status({ failure: INVALID, generation: 1 }) }),
    ],
    [
      "a pool of another template",
      pool("other", { templateName: "ruby", status: status({ failure: INVALID }) }),
    ],
  ])("not Degraded by %s", (_what, p) => {
    expect(byType(TEMPLATE, [p]).Degraded).toMatchObject({
      status: "False",
      reason: TEMPLATE_REASON.RENDERS_PODS,
    });
  });

  it("an Env's member pool is at its revision only when the revision it records is the template's (ADR 0033)", () => {
    const env = { metadata: { name: "e", namespace: "ns", uid: "env-uid" } } as Parameters<
      typeof envOwnerReference
    >[0];
    const OLDER = { ...TEMPLATE, spec: { ...TEMPLATE.spec, idleImage: "other" } };
    const member = (records?: SandboxTemplate) => {
      const p = pool("member", { from: OLDER, status: status({ failure: INVALID }) });
      p.metadata = {
        ...p.metadata,
        ownerReferences: [envOwnerReference(env, true)],
        annotations: {
          ...p.metadata?.annotations,
          ...(records ? revisionAnnotations(revisionOf(records)) : {}),
        },
      };
      return p;
    };
    // Recording the template as it is now, or no revision at all (a snapshot member): at it.
    for (const p of [member(TEMPLATE), member()])
      expect(byType(TEMPLATE, [p]).Degraded).toMatchObject({
        status: "True",
        reason: TEMPLATE_REASON.PODS_REFUSED,
      });
    // Recording an older revision (not refreshed since the template changed): its refusal is not the template's.
    expect(byType(TEMPLATE, [member(OLDER)]).Degraded).toMatchObject({
      status: "False",
      reason: TEMPLATE_REASON.RENDERS_PODS,
    });
  });

  it.each<[string, SandboxPool, string]>([
    [
      "pods missing",
      pool("web", { replicas: 3, status: status({ idle: 1 }) }),
      "ns/web: 2 of 3 pod(s) missing",
    ],
    [
      "idle pods not Ready",
      pool("web", { replicas: 2, status: status({ idle: 2, unready: 1 }) }),
      "ns/web: 1 idle pod(s) not Ready",
    ],
    [
      "a spec its status has not observed (re-rendered a moment ago)",
      pool("web", { generation: 3, status: status({ idle: 1 }) }),
      "ns/web: its new spec is not observed yet",
    ],
    ["a pool without a status yet", pool("web"), "ns/web: its new spec is not observed yet"],
  ])("Progressing while a pool at its revision is short of pods: %s", (_what, p, message) => {
    expect(byType(TEMPLATE, [p]).Progressing).toMatchObject({
      status: "True",
      reason: TEMPLATE_REASON.POOLS_ROLLING,
      message: `pools waiting for pods: ${message}`,
    });
  });

  it("Available while a pool using it has a ready idle pod; not while none has", () => {
    const busy = pool("busy", { status: status({ running: 1 }) });
    const cold = pool("cold", { status: status({ idle: 1, unready: 1 }) });
    const warm = pool("warm", { replicas: 3, status: status({ idle: 2, running: 1 }) });
    expect(byType(TEMPLATE, [busy, cold]).Available).toMatchObject({
      status: "False",
      reason: TEMPLATE_REASON.NO_IDLE_PODS_READY,
      message: "none of its 2 pool(s) has a ready idle pod",
    });
    expect(byType(TEMPLATE, [busy, cold, warm]).Available).toMatchObject({
      status: "True",
      reason: TEMPLATE_REASON.IDLE_PODS_READY,
      message: "1 of 3 pool(s) have ready idle pods: ns/warm: 2",
    });
    // Settled: every pod there, every idle one Ready (the cold pool's unready pod is on its way).
    expect(byType(TEMPLATE, [busy, warm]).Progressing).toMatchObject({
      status: "False",
      reason: TEMPLATE_REASON.POOLS_SETTLED,
    });
  });

  it("names at most five pools, then how many more", () => {
    const many = Array.from({ length: 7 }, (_, i) =>
      pool(`p${i}`, { replicas: 2, status: status({ idle: 1 }) }),
    );
    expect(byType(TEMPLATE, many).Progressing?.message).toMatch(
      /ns\/p4: 1 of 2 pod\(s\) missing; and 2 more$/,
    );
  });
});

describe("planTemplateStatus", () => {
  it("writes the conditions once, under a resourceVersion test; the same state again writes nothing", () => {
    const [write] = planTemplateStatus(TEMPLATE, [], NOW);
    expect(write?.target).toEqual({ kind: "SandboxTemplate", namespace: "", name: "python" });
    const patch = write?.write.op === "patch-status" ? write.write.patch : [];
    expect(patch[0]).toEqual({ op: "test", path: "/metadata/resourceVersion", value: "7" });
    const stored = (patch[1] as { value: SandboxTemplate["status"] }).value;
    expect(
      stored?.conditions?.map((c) => [c.type, c.status, c.observedGeneration, c.lastTransitionTime]),
    ).toEqual([
      ["Available", "True", 2, "2026-11-26T12:00:00Z"],
      ["Progressing", "False", 2, "2026-11-26T12:00:00Z"],
      ["Degraded", "False", 2, "2026-11-26T12:00:00Z"],
    ]);
    const written = { ...TEMPLATE, status: stored };
    expect(planTemplateStatus(written, [], new Date("2026-11-26T12:05:00Z"))).toEqual([]);
    // A new generation is observed (observedGeneration moves); an unchanged status keeps its time.
    const [again] = planTemplateStatus(
      { ...written, metadata: { ...written.metadata, generation: 3 } },
      [],
      NOW,
    );
    const next =
      again?.write.op === "patch-status"
        ? (again.write.patch[1] as { value: SandboxTemplate["status"] }).value
        : undefined;
    expect(next?.conditions?.[0]).toMatchObject({
      observedGeneration: 3,
      lastTransitionTime: "2026-11-26T12:00:00Z",
    });
  });

  it("leaves a template being deleted alone", () => {
    const going = {
      ...TEMPLATE,
      metadata: { ...TEMPLATE.metadata, deletionTimestamp: "2026-11-26T11:59:00Z" },
    };
    expect(planTemplateStatus(going as SandboxTemplate, [], NOW)).toEqual([]);
  });
});
