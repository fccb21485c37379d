// Admission rules for SandboxTemplate beyond its OpenAPI schema.
import type { SandboxTemplate } from "../crd/sandbox-template.ts";
import { podTemplateAnnotationIssues, podTemplateIssues } from "../pool/pod-template-checks.ts";
import type { Check } from "./check.ts";
import { runtimeNamesUnique } from "./pool-checks.ts";

/** templatePodTemplate: pools copy the template's pod template, so it must render sandbox Pods. */
export const templatePodTemplate: Check<SandboxTemplate> = {
  name: "template-pod-template",
  run: (t) => [...podTemplateIssues(t.spec, "spec"), ...podTemplateAnnotationIssues(t.spec, "spec")],
};

/**
 * visibilityRulesWellFormed: a rule's user list must not hold blank or repeated names (typos that
 * silently match nobody, or nothing). As in agentbox, an empty team or user list is a wildcard,
 * so a rule with neither (`{}`) matches every tenant and is allowed.
 */
export const visibilityRulesWellFormed: Check<SandboxTemplate> = {
  name: "visibility-rules-well-formed",
  run: (t) =>
    (t.spec.visibility?.rules ?? []).flatMap((rule, ri) => {
      const at = `spec.visibility.rules[${ri}]`;
      const seen = new Set<string>();
      return (rule.users ?? []).flatMap((u, ui) => {
        const issue =
          u.trim() === ""
            ? { path: `${at}.users[${ui}]`, message: "must not be blank (an empty list matches any user)" }
            : seen.has(u)
              ? { path: `${at}.users[${ui}]`, message: `duplicate user "${u}"` }
              : undefined;
        seen.add(u);
        return issue ? [issue] : [];
      });
    }),
};

/** TEMPLATE_CHECKS are applied to every SandboxTemplate create and spec update. */
export const TEMPLATE_CHECKS = [templatePodTemplate, visibilityRulesWellFormed, runtimeNamesUnique] as const;
