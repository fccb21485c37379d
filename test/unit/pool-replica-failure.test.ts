import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { SandboxPool, SandboxPoolStatus } from "../../lib/crd/sandbox-pool.ts";
import type { Action } from "../../lib/kube/action.ts";
import { poolOwnerReference } from "../../lib/membership/pod-ownership.ts";
import { planStatus } from "../../lib/reconcile/status.ts";

// The ReplicaFailure condition and the Scaling message, from planStatus on plain data: why a
// pool creates no pods, and what a scale-down waits for.

const NOW = new Date("2026-11-23T12:00:00Z");

function pool(
  replicas: number,
  spec: Partial<SandboxPool["spec"]> = {},
  status?: SandboxPoolStatus,
): SandboxPool {
  return {
    metadata: { name: "p", namespace: "ns", uid: "pool-uid", resourceVersion: "3", generation: 1 },
    spec: {
      replicas,
      podCreationImagePolicy: "IdleImage",
      template: { spec: { containers: [{ name: "main", image: "img:1" }] } },
      ...spec,
    },
    ...(status ? { status } : {}),
  };
}
const idlePod = (name: string, marked?: string): V1Pod => ({
  metadata: {
    name,
    labels: { "agentbox.navix.sh/sandbox-pool": "p", "agentbox.navix.sh/sandbox-phase": "idle" },
    ownerReferences: [poolOwnerReference(pool(1))],
    annotations: marked ? { "agentbox.navix.sh/scale-down-protected": marked } : {},
  },
  status: { conditions: [{ type: "Ready", status: "True" }] },
});
const written = (actions: Action[]) => {
  const w = actions.find((a) => a.write.op === "status");
  return { status: w?.write.op === "status" ? w.write.status : undefined, event: w?.event };
};
const failure = (s?: SandboxPoolStatus) => s?.conditions?.find((c) => c.type === "ReplicaFailure");

describe("ReplicaFailure", () => {
  const waiting = pool(2, { templateName: "py", template: undefined });

  it("names a missing template, with a Warning, and tells the Scaling condition", () => {
    const { status, event } = written(planStatus(waiting, [], NOW, { template: null }));
    expect(failure(status)).toMatchObject({ status: "True", reason: "TemplateNotFound" });
    expect(event).toMatchObject({ type: "Warning", reason: "TemplateNotFound" });
    expect(status?.conditions?.find((c) => c.type === "Scaling")?.message).toBe(
      'scaling up from 0 to 2 replicas: SandboxTemplate "py" does not exist; no pods are created until it does',
    );
  });

  it("says nothing new in the run that wrote the copy (the snapshot is stale, pods follow)", () => {
    const { status, event } = written(planStatus(waiting, [], NOW, { template: null, templateCopied: true }));
    expect(failure(status)).toBeUndefined();
    expect(event?.type).not.toBe("Warning");
  });

  it("reports a refused create with the apiserver's answer, and drops the condition once one goes through", () => {
    const refused = written(
      planStatus(pool(2), [], NOW, {
        creates: { created: 0, error: "create pod ns/p-0: 403 Forbidden: exceeded quota" },
      }),
    );
    expect(failure(refused.status)).toMatchObject({
      reason: "FailedCreate",
      message: expect.stringContaining("exceeded quota"),
    });
    const recovered = written(
      planStatus(pool(2, {}, refused.status), [idlePod("p-0")], NOW, { creates: { created: 1 } }),
    );
    expect(failure(recovered.status)).toBeUndefined();
  });
});

describe("the Scaling condition during a hand-made scale-down", () => {
  it("says which pods are marked and when their window ends", () => {
    const pods = [
      idlePod("p-0"),
      idlePod("p-1", "2026-11-23T11:59:55Z"),
      idlePod("p-2", "2026-11-23T11:59:58Z"),
    ];
    const { status } = written(planStatus(pool(1), pods, NOW));
    expect(status?.conditions?.find((c) => c.type === "Scaling")?.message).toBe(
      "scaling down from 3 to 1 replicas (0 running): 2 idle pod(s) marked, deleted once their 10 s protection window ends (2026-11-23T12:00:08.000Z) unless claimed first",
    );
  });
});
