// Admission rules for SandboxPool beyond its OpenAPI schema.
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import { podTemplateAnnotationIssues, podTemplateIssues } from "../pool/pod-template-checks.ts";
import { parseMaxSurge } from "../pool/rollout.ts";
import type { Check } from "./check.ts";

/**
 * poolPodTemplate: a pool renders its Pods from spec.template; without a templateName to copy
 * from, the template must name containers with images.
 */
export const poolPodTemplate: Check<SandboxPool> = {
  name: "pool-pod-template",
  run: (pool) =>
    pool.spec.templateName && pool.spec.template === undefined
      ? []
      : [...podTemplateIssues(pool.spec, "spec"), ...podTemplateAnnotationIssues(pool.spec, "spec")],
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

/**
 * rolloutMaxSurge: a rollout needs room for at least one new pod beside the old ones, so maxSurge
 * is a count of at least 1 or a percentage from 1% (the CRD only knows it is an int or a string).
 */
export const rolloutMaxSurge: Check<SandboxPool> = {
  name: "rollout-max-surge",
  run: (pool) => {
    const value = pool.spec.rollout?.maxSurge;
    if (value === undefined || parseMaxSurge(value) !== undefined) return [];
    return [
      {
        path: "spec.rollout.maxSurge",
        message: `must be a whole number of pods of at least 1 or a percentage of replicas such as "25%" (from "1%"), got ${JSON.stringify(value)}`,
      },
    ];
  },
};

/** POOL_CHECKS are applied to every SandboxPool create and spec update. */
export const POOL_CHECKS = [poolPodTemplate, runtimeNamesUnique, rolloutMaxSurge] as const;
