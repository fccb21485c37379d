// What a request to envd (port 49983) may reach from outside. envd serves its public API (the
// Connect services process.Process and filesystem.Filesystem, /files, /health, /envs, /metrics)
// and control routes the control plane calls on the pod's own address: /init (which sets the
// access token and is exempt from its check), the snapshot and upgrade routes. The control
// routes are E2B's list (envd.yaml's `x-internal` paths, plus /upgrade), refused for any method
// and however spelled: the path is percent-decoded, cleaned and case-folded (`//init`,
// `/files/../init`, `/INIT/`) before it is compared, a superset of what envd's router could match.

/** ENVD_INTERNAL_PATHS are envd's control routes, never reachable through the router. */
export const ENVD_INTERNAL_PATHS: readonly string[] = [
  "/init",
  "/upgrade",
  "/freeze",
  "/unfreeze",
  "/fsfreeze",
  "/fsthaw",
  "/collapse",
];

/** EnvdPath is what the router needs to know of an envd request's path. */
export type EnvdPath =
  /** a control route: 404, before anything else is looked at */
  | { kind: "internal"; path: string }
  /** GET /health: public, no token (the SDK's isRunning and its dropped-connection probe) */
  | { kind: "health" }
  /** GET or POST /files: the token, or a signature envd checks (the SDK's upload/download URLs) */
  | { kind: "files" }
  /** anything else: the token */
  | { kind: "private" }
  /** not a path (no leading slash, bad percent-encoding) */
  | { kind: "bad" };

/** cleanPath is path.posix.normalize without a trailing slash: `.`, `..` and `//` resolved. */
export function cleanPath(path: string): string {
  const out: string[] = [];
  for (const segment of path.split("/")) {
    if (segment === "" || segment === ".") continue;
    if (segment === "..") out.pop();
    else out.push(segment);
  }
  return `/${out.join("/")}`;
}

/**
 * envdPath classifies an envd request by method and raw path (the request target before `?`).
 * Internal is decided on the decoded, cleaned path, and covers what lies below a control route.
 * The public exemptions need the path exactly as envd names it (`/health`, `/files`), so a
 * spelling envd might route elsewhere never skips the token check.
 */
export function envdPath(method: string, rawPath: string): EnvdPath {
  if (!rawPath.startsWith("/")) return { kind: "bad" };
  let decoded: string;
  try {
    decoded = decodeURIComponent(rawPath);
  } catch {
    return { kind: "bad" };
  }
  const clean = cleanPath(decoded.replaceAll("\\", "/"));
  const folded = clean.toLowerCase();
  if (ENVD_INTERNAL_PATHS.some((p) => folded === p || folded.startsWith(`${p}/`)))
    return { kind: "internal", path: clean };
  const m = method.toUpperCase();
  if (rawPath === "/health" && (m === "GET" || m === "HEAD")) return { kind: "health" };
  if (rawPath === "/files" && (m === "GET" || m === "POST")) return { kind: "files" };
  return { kind: "private" };
}
