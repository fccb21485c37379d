// The sandbox router's settings (AGENTBOX_DATA_PLANE_*), read by the host's configuration and
// used by the host to start hosts/node/data-plane.

/** DataPlaneSettings are the router's listeners and scope (AGENTBOX_DATA_PLANE_*). */
export interface DataPlaneSettings {
  /** host the listeners bind (default: the API's listen host). */
  host?: string;
  /** plainPort is the plain HTTP listener (in-cluster callers); 0: any free port; unset: none. */
  plainPort?: number;
  /** tlsPort is the TLS listener (h2 and http/1.1, the API's certificate); 0: any; unset: none. */
  tlsPort?: number;
  /** routerNames are the router's own host names: header routing applies there. */
  routerNames?: string[];
  /** namespace scopes the route watch to one namespace (every namespace when unset). */
  namespace?: string;
  /**
   * nodeFlags start the router as a process of its own with these Node/V8 flags (default
   * DATA_PLANE_NODE_FLAGS); "thread" runs it in a worker thread of the host's process instead.
   */
  runsIn?: { nodeFlags: readonly string[] } | "thread";
}

/**
 * DATA_PLANE_NODE_FLAGS are the router process's V8 flags by default. Its heap is small (about
 * 10 MB) and a download's garbage is socket buffers held outside the heap: --expose-gc lets the
 * router ask for a young-generation collection every 16 MiB it moves (young-collections.ts), which
 * frees them before their external memory forces full collections, and a full collection that
 * does come marks the small heap at once instead of in background steps (ADR 0036 has the
 * measurements).
 */
export const DATA_PLANE_NODE_FLAGS: readonly string[] = ["--no-incremental-marking", "--expose-gc"];

/** DATA_PLANE_PORT and DATA_PLANE_TLS_PORT are the router's default listener ports. */
export const DATA_PLANE_PORT = 8080;
export const DATA_PLANE_TLS_PORT = 9443;

/**
 * dataPlaneSettings is the sandbox router's configuration: it runs when a sandbox domain or
 * AGENTBOX_DATA_PLANE_PORT is set, plain HTTP on that port (8080) and TLS on
 * AGENTBOX_DATA_PLANE_TLS_PORT (9443; "off": none), binding AGENTBOX_DATA_PLANE_HOST (the API's
 * listen host). AGENTBOX_DATA_PLANE_NAMES lists the router's own names (comma-separated; header
 * routing applies there), AGENTBOX_DATA_PLANE_NAMESPACE scopes its watch to one namespace.
 * AGENTBOX_DATA_PLANE_NODE_FLAGS are the Node flags of the router's own process (space-separated;
 * default DATA_PLANE_NODE_FLAGS; empty: none), or "thread" for a worker thread of the host's.
 */
export function dataPlaneSettings(e: {
  AGENTBOX_SANDBOX_DOMAIN?: string | undefined;
  AGENTBOX_DATA_PLANE_PORT?: number | undefined;
  AGENTBOX_DATA_PLANE_TLS_PORT?: number | "off" | undefined;
  AGENTBOX_DATA_PLANE_HOST?: string | undefined;
  AGENTBOX_DATA_PLANE_NAMES?: string | undefined;
  AGENTBOX_DATA_PLANE_NAMESPACE?: string | undefined;
  AGENTBOX_DATA_PLANE_NODE_FLAGS?: string | undefined;
}): DataPlaneSettings | undefined {
  if (e.AGENTBOX_SANDBOX_DOMAIN === undefined && e.AGENTBOX_DATA_PLANE_PORT === undefined) return undefined;
  const tls = e.AGENTBOX_DATA_PLANE_TLS_PORT ?? DATA_PLANE_TLS_PORT;
  const names = (e.AGENTBOX_DATA_PLANE_NAMES ?? "")
    .split(",")
    .map((n) => n.trim().toLowerCase())
    .filter((n) => n !== "");
  return {
    plainPort: e.AGENTBOX_DATA_PLANE_PORT ?? DATA_PLANE_PORT,
    ...(tls === "off" ? {} : { tlsPort: tls }),
    ...(e.AGENTBOX_DATA_PLANE_HOST ? { host: e.AGENTBOX_DATA_PLANE_HOST } : {}),
    ...(names.length ? { routerNames: names } : {}),
    ...(e.AGENTBOX_DATA_PLANE_NAMESPACE ? { namespace: e.AGENTBOX_DATA_PLANE_NAMESPACE } : {}),
    ...(e.AGENTBOX_DATA_PLANE_NODE_FLAGS === undefined
      ? {}
      : { runsIn: nodeFlagsOf(e.AGENTBOX_DATA_PLANE_NODE_FLAGS) }),
  };
}

/** nodeFlagsOf reads AGENTBOX_DATA_PLANE_NODE_FLAGS: "thread", or space-separated flags. */
export function nodeFlagsOf(value: string): NonNullable<DataPlaneSettings["runsIn"]> {
  if (value.trim() === "thread") return "thread";
  return { nodeFlags: value.split(/\s+/).filter((f) => f !== "") };
}
