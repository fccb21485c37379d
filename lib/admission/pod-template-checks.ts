// Checks on the schemaless pod template (spec.template): the CRD keeps it opaque so any pod
// field round-trips, which leaves the fields the product needs to render Pods unchecked.
import type { ApiIssue } from "../api/parse-with.ts";

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

interface TemplateHolder {
  template?: Record<string, unknown> | undefined;
  idleImage?: string | undefined;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * podTemplateIssues checks that spec.template can become a Pod: a containers list whose entries
 * have unique DNS-label names and an image (the first container may leave the image to
 * idleImage, which replaces it on idle Pods).
 */
export function podTemplateIssues(spec: TemplateHolder, base: string): ApiIssue[] {
  const path = `${base}.template.spec.containers`;
  const podSpec = spec.template?.spec;
  const containers = isRecord(podSpec) ? podSpec.containers : undefined;
  if (!Array.isArray(containers) || containers.length === 0) {
    return [{ path, message: "must list at least one container (the sandbox's main container comes first)" }];
  }
  const issues: ApiIssue[] = [];
  const seen = new Set<string>();
  containers.forEach((c: unknown, i) => {
    const at = `${path}[${i}]`;
    if (!isRecord(c)) {
      issues.push({ path: at, message: "must be an object" });
      return;
    }
    if (typeof c.name !== "string" || !DNS_LABEL.test(c.name) || c.name.length > 63) {
      issues.push({
        path: `${at}.name`,
        message: "must be a DNS label (lowercase letters, digits, '-'; at most 63)",
      });
    } else if (seen.has(c.name)) {
      issues.push({ path: `${at}.name`, message: `duplicate container name "${c.name}"` });
    } else {
      seen.add(c.name);
    }
    const hasImage = typeof c.image === "string" && c.image.trim() !== "";
    if (!hasImage && !(i === 0 && spec.idleImage)) {
      issues.push({
        path: `${at}.image`,
        message: i === 0 ? "is required unless spec.idleImage is set" : "is required",
      });
    }
  });
  return issues;
}
