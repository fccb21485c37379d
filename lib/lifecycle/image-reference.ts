// Container image references as kubelet and users spell them. `nginx`, `nginx:latest` and
// `docker.io/library/nginx:latest` name the same image, and kubelet reports the long form in
// status.image, so comparing them as plain strings would call a finished update unfinished.

const DIGEST_SUFFIX = /@([a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,})$/;

/**
 * normalizeImage rewrites an image reference to its fully qualified form: the implicit
 * `docker.io` registry (and `index.docker.io` alias), the implicit `library/` namespace of
 * official images, and the implicit `:latest` tag when there is neither tag nor digest.
 * Anything it cannot read is returned unchanged, so unequal inputs stay unequal.
 */
export function normalizeImage(image: string): string {
  const trimmed = image.trim();
  if (trimmed === "") return trimmed;
  const at = trimmed.indexOf("@");
  const namePart = at === -1 ? trimmed : trimmed.slice(0, at);
  const digestPart = at === -1 ? "" : trimmed.slice(at);
  const slash = namePart.indexOf("/");
  const first = slash === -1 ? "" : namePart.slice(0, slash);
  const hasRegistry = first !== "" && (first.includes(".") || first.includes(":") || first === "localhost");
  let registry = hasRegistry ? first : "docker.io";
  let path = hasRegistry ? namePart.slice(slash + 1) : namePart;
  if (registry === "index.docker.io") registry = "docker.io";
  if (registry === "docker.io" && !path.includes("/")) path = `library/${path}`;
  const lastSegment = path.slice(path.lastIndexOf("/") + 1);
  if (!lastSegment.includes(":") && digestPart === "") path = `${path}:latest`;
  return `${registry}/${path}${digestPart}`;
}

/**
 * referenceDigest returns the content digest pinned in a reference (`repo@sha256:…`), or
 * undefined when the reference names a tag: a pinned digest needs no registry round trip.
 */
export function referenceDigest(image: string): string | undefined {
  return DIGEST_SUFFIX.exec(image.trim())?.[1];
}

/**
 * withoutPin drops a digest pinned after a tag (`repo:tag@sha256:…` → `repo:tag`): the reference
 * restartReference makes names the same image as its tag did when the container was pulled. A
 * reference with only a digest, or only a tag, is returned unchanged.
 */
function withoutPin(image: string): string {
  const trimmed = image.trim();
  const at = trimmed.indexOf("@");
  if (at === -1) return trimmed;
  const name = trimmed.slice(0, at);
  const lastSegment = name.slice(name.lastIndexOf("/") + 1);
  return lastSegment.includes(":") ? name : trimmed;
}

/**
 * sameImage tells whether a container whose spec says `running` runs the image `wanted` names:
 * equal after normalising, or `running` is `wanted` pinned to the digest it was pulled at (a
 * reset that had to restart a container on the image it already ran, see restartReference).
 */
export function sameImage(running: string, wanted: string): boolean {
  const a = normalizeImage(running);
  const b = normalizeImage(wanted);
  if (a === b) return true;
  return referenceDigest(wanted) === undefined && normalizeImage(withoutPin(running)) === b;
}

const REPO_DIGEST = /@(sha256:[0-9a-f]{64})$/;

/**
 * restartReference is another spelling of `image` for a container that must be restarted on the
 * image it runs: kubelet restarts a container whose spec image string changes, whatever the
 * string resolves to. A tag is pinned to the digest the container runs (`repo:tag@sha256:…`, from
 * its status.imageID, which must name a registry digest; a runtime that reports only a local
 * image id gives none). The next reset swaps the pinned spelling back to the pool's, which
 * restarts the container again. Undefined when the reference already carries a digest or the
 * status names none: such a container cannot be restarted in place, its pod is replaced instead.
 */
export function restartReference(image: string, imageID: string | undefined): string | undefined {
  const trimmed = image.trim();
  if (trimmed === "" || referenceDigest(trimmed) !== undefined) return undefined;
  const digest = REPO_DIGEST.exec(imageID ?? "")?.[1];
  if (!digest) return undefined;
  // An implicit tag is spelled out, so the pinned reference still reads as the same tag.
  const tagged = trimmed.slice(trimmed.lastIndexOf("/") + 1).includes(":") ? trimmed : `${trimmed}:latest`;
  return `${tagged}@${digest}`;
}
