import { describe, expect, it } from "vitest";
import type { SandboxPool, SandboxPoolStatus } from "../../lib/crd/sandbox-pool.ts";
import type { SandboxTemplate } from "../../lib/crd/sandbox-template.ts";
import type { Action } from "../../lib/kube/action.ts";
import { planStatus } from "../../lib/reconcile/status.ts";

// The TemplateAvailable condition, from planStatus on plain data: a pool whose template was
// deleted says so (only admins may claim from it then), and a pool at rest costs no write.

const NOW = new Date("2026-11-23T12:00:00Z");
const LATER = new Date("2026-11-23T12:05:00Z");
const template = { metadata: { name: "py" }, spec: {} } as SandboxTemplate;

/** copied is a pool that carries the copy of template "py" (as the webhook or copy-template made it). */
function copied(status?: SandboxPoolStatus, templateName = "py"): SandboxPool {
  return {
    metadata: {
      name: "p",
      namespace: "ns",
      resourceVersion: "3",
      generation: 1,
      annotations: {
        "agentbox.navix.sh/template-name": "py",
        "agentbox.navix.sh/template-version": "",
        "agentbox.navix.sh/overrides": "{}",
      },
    },
    spec: {
      replicas: 0,
      podCreationImagePolicy: "IdleImage",
      ...(templateName ? { templateName } : {}),
      template: { spec: { containers: [{ name: "main", image: "img:1" }] } },
    },
    ...(status ? { status } : {}),
  };
}
const statusOf = (actions: Action[]) => {
  const w = actions.find((a) => a.write.op === "status");
  return w?.write.op === "status" ? w.write.status : undefined;
};
const condition = (s?: SandboxPoolStatus) => s?.conditions?.find((c) => c.type === "TemplateAvailable");

describe("TemplateAvailable", () => {
  it("is True while the template exists, and written once", () => {
    const status = statusOf(planStatus(copied(), [], NOW, { template }));
    expect(condition(status)).toMatchObject({ status: "True", reason: "TemplateFound" });
    expect(statusOf(planStatus(copied(status), [], LATER, { template }))).toBeUndefined();
  });

  it("turns False once the template is deleted, naming it and who may still claim", () => {
    const before = statusOf(planStatus(copied(), [], NOW, { template }));
    const after = statusOf(planStatus(copied(before), [], LATER, { template: null }));
    expect(condition(after)).toEqual({
      type: "TemplateAvailable",
      status: "False",
      reason: "TemplateDeleted",
      message: 'SandboxTemplate "py" was deleted; only admin API keys may claim from this pool',
      lastTransitionTime: "2026-11-23T12:05:00Z",
      observedGeneration: 1,
    });
    // At rest: no further write, and a run that did not read the template keeps what is stored.
    expect(statusOf(planStatus(copied(after), [], LATER, { template: null }))).toBeUndefined();
    expect(statusOf(planStatus(copied(after), [], LATER, {}))).toBeUndefined();
  });

  it("says a template that never existed is not found, and is absent for a pool naming none", () => {
    const never = { ...copied(), metadata: { name: "p", namespace: "ns", generation: 1 } };
    expect(condition(statusOf(planStatus(never, [], NOW, { template: null })))).toMatchObject({
      status: "False",
      reason: "TemplateNotFound",
    });
    const stored = statusOf(planStatus(copied(), [], NOW, { template: null }));
    expect(condition(statusOf(planStatus(copied(stored, ""), [], LATER, {})))).toBeUndefined();
  });
});
