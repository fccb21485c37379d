// Admission rules for SandboxTemplate beyond its OpenAPI schema.
import type { SandboxTemplate } from "../api/sandbox-template.ts";
import type { Check } from "./check.ts";
import { podTemplateIssues } from "./pod-template-checks.ts";
import { runtimeNamesUnique } from "./pool-checks.ts";

/** templatePodTemplate: pools copy the template's pod template, so it must render Pods. */
export const templatePodTemplate: Check<SandboxTemplate> = {
  name: "template-pod-template",
  run: (t) => podTemplateIssues(t.spec, "spec"),
};

/**
 * visibilityRulesWellFormed: rules are ORed and an empty field is a wildcard, so a rule with
 * neither team nor users makes the template public while looking restrictive; blank or
 * repeated names are typos that silently match nobody.
 */
export const visibilityRulesWellFormed: Check<SandboxTemplate> = {
  name: "visibility-rules-well-formed",
  run: (t) =>
    (t.spec.visibility?.rules ?? []).flatMap((rule, ri) => {
      const at = `spec.visibility.rules[${ri}]`;
      const users = rule.users ?? [];
      const issues = [];
      if (rule.team !== undefined && rule.team.trim() === "") {
        issues.push({ path: `${at}.team`, message: "must not be blank (omit it to match any team)" });
      }
      if (!rule.team && users.length === 0) {
        issues.push({
          path: at,
          message:
            "matches every tenant (no team and no users); remove spec.visibility.rules to make the template public",
        });
      }
      const seen = new Set<string>();
      users.forEach((u, ui) => {
        if (u.trim() === "") issues.push({ path: `${at}.users[${ui}]`, message: "must not be blank" });
        else if (seen.has(u)) issues.push({ path: `${at}.users[${ui}]`, message: `duplicate user "${u}"` });
        seen.add(u);
      });
      return issues;
    }),
};

/** TEMPLATE_CHECKS are applied to every SandboxTemplate create and spec update. */
export const TEMPLATE_CHECKS = [templatePodTemplate, visibilityRulesWellFormed, runtimeNamesUnique] as const;
