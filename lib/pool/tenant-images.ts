// Which images a create may put in which containers of a pool. A tenant's image inherits the
// container's mounts, securityContext and the pod's imagePullSecrets, so only the containers the
// pod template marks as the sandbox's take one (sidecars never), and only images the template
// allows: its tenant-images annotation, else each container's own repository.
import { SANDBOX_CONTAINERS_ANNOTATION, TENANT_IMAGES_ANNOTATION } from "../crd/keys.ts";
import { type ImageName, parseImageName, repositoryPrefix } from "./image-name.ts";

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** PodTemplateLike is the part of a pod template the rule reads: annotations and containers. */
export interface PodTemplateLike {
  metadata?: unknown;
  spec?: unknown;
}

/** ImagePattern is one allowlist entry: any image, a repository, or a repository prefix. */
type ImagePattern = { any: true } | { repository: string } | { prefix: string };

/** AnnotationIssue is a malformed rule annotation: which one, and why. */
export interface AnnotationIssue {
  annotation: string;
  message: string;
}

/** TenantImageRequest is one image a create asks for: the field it came from, the container. */
export interface TenantImageRequest {
  field: string;
  container: string;
  image: string;
}

interface Container {
  name: string;
  image?: string | undefined;
}

function containersOf(template: PodTemplateLike | undefined): Container[] {
  const spec = template?.spec as { containers?: unknown } | undefined;
  const list = Array.isArray(spec?.containers) ? (spec.containers as unknown[]) : [];
  return list.flatMap((c) => {
    const { name, image } = (c ?? {}) as { name?: unknown; image?: unknown };
    return typeof name === "string" ? [{ name, ...(typeof image === "string" ? { image } : {}) }] : [];
  });
}

const entries = (value: string) => value.split(",").map((e) => e.trim());

/**
 * annotationOf reads one annotation of a pod template; the CRD keeps the template schemaless, so
 * a stored value may be no string at all (a number, an object): that is undefined only when absent.
 */
function annotationOf(template: PodTemplateLike | undefined, key: string): unknown {
  const metadata = template?.metadata as { annotations?: unknown } | undefined;
  const annotations = metadata?.annotations;
  return typeof annotations === "object" && annotations !== null
    ? (annotations as Record<string, unknown>)[key]
    : undefined;
}

/** parsePattern reads one tenant-images entry, or says why it is not one. */
function parsePattern(entry: string): ImagePattern | string {
  if (entry === "") return "has an empty entry (two commas, or a comma at an end)";
  if (entry === "*") return { any: true };
  const star = entry.indexOf("*");
  if (star !== -1) {
    const prefix = star === entry.length - 1 ? repositoryPrefix(entry.slice(0, -1)) : undefined;
    return prefix === undefined
      ? `"${entry}": a prefix has one "*", at its end, after a "/" (ghcr.io/org/*, library/python*)`
      : { prefix };
  }
  const name = parseImageName(entry);
  if (!name) return `"${entry}" is not an image repository (ghcr.io/org/app)`;
  if (name.tag !== undefined || name.digest !== undefined)
    return `"${entry}" names a tag or digest: list the repository, any tag or digest of it is allowed`;
  if (!entry.includes("/") && entry.includes("."))
    return `"${entry}" is a Docker Hub image, not a registry: for every image of a registry write ${entry}/*`;
  return { repository: name.repository };
}

/** parsePatterns reads the tenant-images annotation: its patterns, or why it is malformed. */
function parsePatterns(value: string): ImagePattern[] | string {
  if (value.trim() === "") return [];
  const patterns: ImagePattern[] = [];
  for (const entry of entries(value)) {
    const p = parsePattern(entry);
    if (typeof p === "string") return p;
    patterns.push(p);
  }
  return patterns;
}

/** parseSandboxContainers reads the sandbox-containers annotation against the template's containers. */
function parseSandboxContainers(value: string, containers: readonly Container[]): string[] | string {
  const names = entries(value);
  if (names.length === 1 && names[0] === "") return "must name at least one container";
  const seen = new Set<string>();
  for (const n of names) {
    if (!DNS_LABEL.test(n)) return `"${n}" is not a container name`;
    if (seen.has(n)) return `names "${n}" twice`;
    if (!containers.some((c) => c.name === n))
      return `"${n}" is no container of the template (containers: ${containers.map((c) => c.name).join(", ")})`;
    seen.add(n);
  }
  return names;
}

/**
 * tenantImageAnnotationIssues are the malformed rule annotations of a pod template, for admission
 * to refuse by name (a claim refuses every tenant image of such a template: it fails closed).
 */
export function tenantImageAnnotationIssues(template: PodTemplateLike | undefined): AnnotationIssue[] {
  const issues: AnnotationIssue[] = [];
  const check = (annotation: string, parse: (value: string) => unknown) => {
    const value = annotationOf(template, annotation);
    if (value === undefined) return;
    const parsed = typeof value === "string" ? parse(value) : "must be a string";
    if (typeof parsed === "string") issues.push({ annotation, message: parsed });
  };
  check(SANDBOX_CONTAINERS_ANNOTATION, (v) => parseSandboxContainers(v, containersOf(template)));
  check(TENANT_IMAGES_ANNOTATION, parsePatterns);
  return issues;
}

function matches(pattern: ImagePattern, repository: string): boolean {
  if ("any" in pattern) return true;
  if ("prefix" in pattern) return repository.startsWith(pattern.prefix);
  return repository === pattern.repository;
}

/** sameReference: two references name one image (repository, tag, digest; no tag is latest). */
function sameReference(a: ImageName | undefined, b: ImageName | undefined): boolean {
  if (!a || !b) return false;
  const tag = (n: ImageName) => n.tag ?? (n.digest === undefined ? "latest" : undefined);
  return a.repository === b.repository && tag(a) === tag(b) && a.digest === b.digest;
}

const describePattern = (p: ImagePattern) =>
  "any" in p ? "any image" : "prefix" in p ? `${p.prefix}*` : p.repository;

/**
 * tenantImageRefusal says why a create may not run these images in this pod template, naming the
 * field and the rule, or undefined when it may. A container may always be given the image its
 * template already names; any other image goes only to a sandbox container (annotation
 * sandbox-containers; unset: the first container) and must match the tenant-images allowlist
 * (unset: that container's own repository, any tag or digest).
 */
export function tenantImageRefusal(
  template: PodTemplateLike | undefined,
  requests: readonly TenantImageRequest[],
): string | undefined {
  const containers = containersOf(template);
  const malformed = tenantImageAnnotationIssues(template)[0];
  // Well-formed when not malformed: each is a string, or absent.
  const sandboxValue = annotationOf(template, SANDBOX_CONTAINERS_ANNOTATION) as string | undefined;
  const sandbox =
    sandboxValue === undefined ? containers.slice(0, 1).map((c) => c.name) : entries(sandboxValue);
  const allowValue = annotationOf(template, TENANT_IMAGES_ANNOTATION) as string | undefined;
  for (const { field, container, image } of requests) {
    const own = containers.find((c) => c.name === container)?.image;
    const wanted = parseImageName(image);
    const ownName = own === undefined ? undefined : parseImageName(own);
    if (own !== undefined && (image === own || sameReference(wanted, ownName))) continue;
    if (malformed)
      return `${field}: the pool's pod template annotation ${malformed.annotation} is malformed (${malformed.message}), so the pool takes no tenant image`;
    if (!sandbox.includes(container))
      return `${field}: container "${container}" does not take a tenant's image (the sandbox's containers: ${sandbox.join(", ") || "none"}; pod template annotation ${SANDBOX_CONTAINERS_ANNOTATION})`;
    if (!wanted) return `${field}: "${image}" is not an image reference (registry/repository:tag)`;
    const patterns =
      allowValue !== undefined
        ? (parsePatterns(allowValue) as ImagePattern[])
        : ownName
          ? [{ repository: ownName.repository }]
          : [];
    if (patterns.some((p) => matches(p, wanted.repository))) continue;
    const allowed = patterns.length
      ? `${patterns.map(describePattern).join(", ")}, any tag or digest`
      : "none";
    const rule =
      allowValue !== undefined
        ? `pod template annotation ${TENANT_IMAGES_ANNOTATION}`
        : `the container's own repository, as pod template annotation ${TENANT_IMAGES_ANNOTATION} is unset`;
    return `${field}: image "${image}" (repository ${wanted.repository}) is not allowed in container "${container}" (allowed: ${allowed}; ${rule})`;
  }
  return undefined;
}
