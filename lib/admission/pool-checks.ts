// Admission rules for SandboxPool beyond its OpenAPI schema.
import type { SandboxPool } from "../api/sandbox-pool.ts";
import type { Check } from "./check.ts";
import { podTemplateIssues } from "./pod-template-checks.ts";

/**
 * poolPodTemplate: a pool renders its Pods from spec.template; without a templateName to copy
 * from, the template must name containers with images.
 */
export const poolPodTemplate: Check<SandboxPool> = {
  name: "pool-pod-template",
  run: (pool) =>
    pool.spec.templateName && pool.spec.template === undefined ? [] : podTemplateIssues(pool.spec, "spec"),
};

/** runtimeNamesUnique: duplicates are refused by the list-map too; this names the index. */
export const runtimeNamesUnique: Check<{ spec: { runtimes?: { name: string }[] | undefined } }> = {
  name: "runtime-names-unique",
  run: (obj) => {
    const seen = new Set<string>();
    return (obj.spec.runtimes ?? []).flatMap((r, i) => {
      if (seen.has(r.name))
        return [{ path: `spec.runtimes[${i}].name`, message: `duplicate runtime "${r.name}"` }];
      seen.add(r.name);
      return [];
    });
  },
};

/** POOL_CHECKS are applied to every SandboxPool create and spec update. */
export const POOL_CHECKS = [poolPodTemplate, runtimeNamesUnique] as const;
