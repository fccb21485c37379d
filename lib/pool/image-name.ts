// Image references read strictly, for deciding what a tenant may run: the grammar of the
// distribution reference (github.com/distribution/reference), and Docker's rule for telling a
// registry from the first path component. Anything the grammar refuses is not an image a tenant
// may name, so a spelling the runtime reads differently from this reading never gets through.

const DOMAIN_COMPONENT = "(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])";
const DOMAIN = new RegExp(
  `^(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|\\[[a-fA-F0-9:]+\\])(?::[0-9]+)?$`,
);
const PATH_COMPONENT = "[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*";
const REMOTE = new RegExp(`^${PATH_COMPONENT}(?:/${PATH_COMPONENT})*$`);
const TAG = /^[\w][\w.-]{0,127}$/;
const DIGEST = /^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}$/;
/** NAME_MAX is the grammar's limit on a name (registry and path), in characters. */
const NAME_MAX = 255;

/** ImageName is a reference taken apart: its repository, normalised, and its tag or digest. */
export interface ImageName {
  /** repository is `registry/path`: the registry in lower case, Docker Hub's spelled out. */
  repository: string;
  tag?: string;
  digest?: string;
}

/**
 * splitDomain applies Docker's rule: the part before the first `/` is a registry when it holds a
 * `.` or a `:`, is `localhost`, or has an upper-case letter; otherwise the name is all path, on
 * Docker Hub. Undefined registry: Docker Hub.
 */
function splitDomain(name: string): { registry?: string; path: string } {
  const slash = name.indexOf("/");
  if (slash === -1) return { path: name };
  const first = name.slice(0, slash);
  const isDomain = /[.:]/.test(first) || first === "localhost" || first !== first.toLowerCase();
  return isDomain ? { registry: first, path: name.slice(slash + 1) } : { path: name };
}

/** registryKey is how a registry compares: lower case (host names are), index.docker.io as docker.io. */
function registryKey(registry: string | undefined): string {
  const lower = (registry ?? "docker.io").toLowerCase();
  return lower === "index.docker.io" ? "docker.io" : lower;
}

/**
 * parseImageName reads an image reference (`name[:tag][@digest]`) under the strict grammar, or
 * undefined when it is not one. Docker Hub's short forms are spelled out (`python` is
 * `docker.io/library/python`), so two spellings of one repository compare equal.
 */
export function parseImageName(reference: string): ImageName | undefined {
  const at = reference.indexOf("@");
  const digest = at === -1 ? undefined : reference.slice(at + 1);
  if (digest !== undefined && !DIGEST.test(digest)) return undefined;
  const named = at === -1 ? reference : reference.slice(0, at);
  const colon = named.lastIndexOf(":");
  const hasTag = colon > named.lastIndexOf("/");
  const tag = hasTag ? named.slice(colon + 1) : undefined;
  if (tag !== undefined && !TAG.test(tag)) return undefined;
  const name = hasTag ? named.slice(0, colon) : named;
  if (name.length === 0 || name.length > NAME_MAX) return undefined;
  const { registry, path } = splitDomain(name);
  if (registry !== undefined && !DOMAIN.test(registry)) return undefined;
  if (!REMOTE.test(path)) return undefined;
  const key = registryKey(registry);
  const fullPath = key === "docker.io" && !path.includes("/") ? `library/${path}` : path;
  return {
    repository: `${key}/${fullPath}`,
    ...(tag !== undefined ? { tag } : {}),
    ...(digest !== undefined ? { digest } : {}),
  };
}

/**
 * repositoryPrefix normalises the part of an allowlist prefix before its `*` (`ghcr.io/org/`,
 * `library/py`): the registry as parseImageName compares it, the rest as written (no `library/`
 * is added: `docker.io/*` is all of Docker Hub). Undefined when no name could start so, or when
 * the prefix does not reach past its registry (a `/`), which would let `ghcr.io*` match
 * `ghcr.io.evil.example/x`.
 */
export function repositoryPrefix(prefix: string): string | undefined {
  if (!prefix.includes("/")) return undefined;
  // Any name that starts with the prefix must parse; one more path character stands for the rest.
  const sample = `${prefix}x`;
  if (!parseImageName(sample) || sample.includes("@") || /:[^/]*$/.test(sample)) return undefined;
  const { registry, path } = splitDomain(sample);
  return `${registryKey(registry)}/${path.slice(0, -1)}`;
}
