// Snapshot image names. A pause pushes each committed container as
// `<registry>/agentbox-snapshots/<namespace>/<sandboxId>/<container>:g<generation>`: one repository
// per sandbox container, so deleting a sandbox's images touches nothing else, and a tag per
// pause, so a paused-again sandbox never overwrites the image a running resume pulled. Every
// snapshot lives under one repository prefix, so the snapshot agent's registry rights (push,
// delete) and the tenant image check (a create may not name one) are one path rule.
import { normalizeImage } from "../lifecycle/image-reference.ts";

/** SNAPSHOT_REPOSITORY is the repository prefix every snapshot image lives under. */
export const SNAPSHOT_REPOSITORY = "agentbox-snapshots";

/** ImageReference is an image reference split into its parts (implicit docker.io parts made explicit). */
export interface ImageReference {
  /** registry: the host (and port) the reference names, e.g. `registry.agentbox.test`. */
  registry: string;
  /** repository: the path inside the registry, e.g. `agentbox/sandbox-a`. */
  repository: string;
  /** tag, when the reference names one (`latest` when it names neither tag nor digest). */
  tag?: string;
  /** digest (`sha256:<hex>`), when the reference pins one. */
  digest?: string;
}

// The distribution spec's grammar: path components of lowercase alphanumerics joined by
// separators; tags of up to 128 word characters, dots and dashes; digests algorithm:hex.
const COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^[\w][\w.-]{0,127}$/;
const DIGEST = /^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}$/;
const HOST = /^[a-zA-Z0-9](?:[a-zA-Z0-9.-]*[a-zA-Z0-9])?(?::[0-9]+)?$/;

/**
 * parseImageReference splits a reference into registry host, repository, tag and digest, after
 * normalizeImage (so `nginx` reads as `docker.io/library/nginx:latest`); a reference outside the
 * distribution grammar is an error that quotes it.
 */
export function parseImageReference(ref: string): ImageReference {
  const bad = (why: string) => new Error(`image reference ${JSON.stringify(ref)} is not valid: ${why}`);
  const normalized = normalizeImage(ref);
  if (normalized === "") throw bad("it is empty");
  const at = normalized.indexOf("@");
  const name = at === -1 ? normalized : normalized.slice(0, at);
  const digest = at === -1 ? undefined : normalized.slice(at + 1);
  if (digest !== undefined && !DIGEST.test(digest)) throw bad(`digest ${JSON.stringify(digest)}`);
  const slash = name.indexOf("/");
  if (slash === -1) throw bad("no repository");
  const registry = name.slice(0, slash);
  if (!HOST.test(registry)) throw bad(`registry ${JSON.stringify(registry)}`);
  let repository = name.slice(slash + 1);
  let tag: string | undefined;
  const colon = repository.lastIndexOf(":");
  if (colon > repository.lastIndexOf("/")) {
    tag = repository.slice(colon + 1);
    repository = repository.slice(0, colon);
    if (!TAG.test(tag)) throw bad(`tag ${JSON.stringify(tag)}`);
  }
  if (!repository.split("/").every((c) => COMPONENT.test(c)))
    throw bad(`repository ${JSON.stringify(repository)}`);
  return { registry, repository, ...(tag === undefined ? {} : { tag }), ...(digest ? { digest } : {}) };
}

/** formatImageReference writes a reference back: `registry/repository[:tag][@digest]`. */
export function formatImageReference(ref: ImageReference): string {
  return `${ref.registry}/${ref.repository}${ref.tag ? `:${ref.tag}` : ""}${ref.digest ? `@${ref.digest}` : ""}`;
}

/**
 * snapshotRepository is the repository one sandbox container's snapshots are pushed to:
 * `<registry>/agentbox-snapshots/<namespace>/<sandboxId>/<container>` (every pause of it is a tag
 * there). Parts that would make an invalid repository are an error, never silently rewritten.
 */
export function snapshotRepository(
  registry: string,
  namespace: string,
  sandboxId: string,
  container: string,
): string {
  if (!HOST.test(registry)) throw new Error(`snapshot registry ${JSON.stringify(registry)} is not a host`);
  for (const [what, part] of [
    ["namespace", namespace],
    ["sandbox id", sandboxId],
    ["container", container],
  ] as const)
    if (!COMPONENT.test(part))
      throw new Error(`snapshot ${what} ${JSON.stringify(part)} cannot be a repository path component`);
  return `${registry}/${SNAPSHOT_REPOSITORY}/${namespace}/${sandboxId}/${container}`;
}

/**
 * snapshotTarget is the reference a pause pushes one container's snapshot to:
 * `<registry>/agentbox-snapshots/<namespace>/<sandboxId>/<container>:g<generation>`, where the
 * generation is the SandboxSnapshot's metadata.generation (one tag per pause).
 */
export function snapshotTarget(
  registry: string,
  namespace: string,
  sandboxId: string,
  container: string,
  generation: number,
): string {
  const repository = snapshotRepository(registry, namespace, sandboxId, container);
  if (!Number.isSafeInteger(generation) || generation < 1)
    throw new Error(`snapshot generation ${generation} is not a positive integer`);
  return `${repository}:g${generation}`;
}

/**
 * parseSnapshotRepository splits `<registry>/agentbox-snapshots/<path>` (a repository, with no
 * tag or digest) into its registry host and repository path; anything else, another repository
 * included, is an error quoting it: what the snapshot agent may empty is exactly this.
 */
export function parseSnapshotRepository(name: string): { registry: string; repository: string } {
  const bad = (why: string) => new Error(`${JSON.stringify(name)} is not a snapshot repository: ${why}`);
  const slash = name.indexOf("/");
  if (slash === -1) throw bad("no registry");
  const registry = name.slice(0, slash);
  const repository = name.slice(slash + 1);
  if (!HOST.test(registry)) throw bad(`registry ${JSON.stringify(registry)}`);
  const parts = repository.split("/");
  if (parts[0] !== SNAPSHOT_REPOSITORY || parts.length < 2) throw bad(`not under ${SNAPSHOT_REPOSITORY}/`);
  if (!parts.every((c) => COMPONENT.test(c))) throw bad("a path component is not valid");
  return { registry, repository };
}

/**
 * isSnapshotImage tells whether a reference names a snapshot image: its repository path starts
 * with `agentbox-snapshots/`, whatever the registry host (a tenant may not point a create at one
 * through another host name). An unreadable reference is not one.
 */
export function isSnapshotImage(ref: string): boolean {
  try {
    return parseImageReference(ref).repository.startsWith(`${SNAPSHOT_REPOSITORY}/`);
  } catch {
    return false;
  }
}

/**
 * staleKey names an earlier image in a snapshot's status.staleImages: its container and its tag
 * (`sandbox:g2`), so the images of several earlier pauses not yet deleted never overwrite each
 * other; an image without a tag is keyed by the whole reference.
 */
export function staleKey(container: string, image: string): string {
  const name = image.split("@")[0] ?? image;
  const colon = name.lastIndexOf(":");
  const tag = colon > name.lastIndexOf("/") ? name.slice(colon + 1) : "";
  return tag ? `${container}:${tag}` : `${container}:${image}`;
}
