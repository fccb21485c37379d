// Checks on the schemaless pod template (spec.template): the CRD keeps it opaque so any pod
// field round-trips, which leaves the fields the product needs to render Pods unchecked.
import type { ApiIssue } from "../crd/parse-with.ts";
import { tenantImageAnnotationIssues } from "./tenant-images.ts";

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

interface TemplateHolder {
  template?: Record<string, unknown> | undefined;
  idleImage?: string | undefined;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * podTemplateIssues checks that spec.template can become a sandbox Pod: a containers list whose
 * entries have unique DNS-label names and an image (the first container may leave the image to
 * idleImage, which replaces it on idle Pods), and not on the node's network (hostNetwork: its pod
 * IP would be the node's, so the router would send a sandbox's traffic, its access token among
 * it, to whatever listens on the node, and no NetworkPolicy fences such a pod).
 */
export function podTemplateIssues(spec: TemplateHolder, base: string): ApiIssue[] {
  const path = `${base}.template.spec.containers`;
  const podSpec = spec.template?.spec;
  const issues: ApiIssue[] = [];
  if (isRecord(podSpec) && podSpec.hostNetwork === true) {
    issues.push({
      path: `${base}.template.spec.hostNetwork`,
      message:
        "must not be true: a sandbox on the node's network has the node's IP as its pod IP, which the router would send its traffic to, and no NetworkPolicy fences it",
    });
  }
  const containers = isRecord(podSpec) ? podSpec.containers : undefined;
  if (!Array.isArray(containers) || containers.length === 0) {
    issues.push({
      path,
      message: "must list at least one container (the sandbox's main container comes first)",
    });
    return issues;
  }
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

/**
 * podTemplateAnnotationIssues names the malformed tenant-image annotations of spec.template
 * (sandbox-containers, tenant-images: tenantImageAnnotationIssues), so admission refuses them
 * rather than every create with an image failing later. Kept out of podTemplateIssues: a stored
 * pool with such an annotation still renders Pods, only tenant images are refused at claim.
 */
export function podTemplateAnnotationIssues(spec: TemplateHolder, base: string): ApiIssue[] {
  const template = spec.template as Parameters<typeof tenantImageAnnotationIssues>[0];
  return tenantImageAnnotationIssues(template).map((i) => ({
    path: `${base}.template.metadata.annotations[${i.annotation}]`,
    message: i.message,
  }));
}
