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
