import { tmpdir } from "node:os";
import { parseArgs } from "node:util";

/** AgentFlags are the snapshot agent program's settings (hosts/snapshot-agent/main.ts). */
export interface AgentFlags {
  /** kubeconfig: a file, or undefined for client-node's default (in a pod: its service account). */
  kubeconfig?: string;
  fieldSelector: string;
  containerdAddress: string;
  ctr: string;
  /** registryName is the snapshot images' registry name (`registry.agentbox.test`). */
  registryName: string;
  /** endpoints maps registry names to the base URLs they are reached at. */
  endpoints: Record<string, string>;
  logLevel: string;
  /** tmpDir is where a container's changes are spooled before their push. */
  tmpDir: string;
  commitTimeoutMs: number;
}

export const USAGE = `usage: snapshot-agent --field-selector spec.source.node=NODE [options]

  --field-selector S     which SandboxSnapshots are this agent's (required), e.g. spec.source.node=real-node-0;
                         spec.source.node!=a,spec.source.node!=b for every node but a and b
  --kubeconfig FILE      the apiserver and credentials (default: $KUBECONFIG, ~/.kube/config, in-cluster)
  --containerd-address A containerd's socket (default /run/containerd/containerd.sock)
  --ctr PATH             containerd's ctr binary (default ctr)
  --registry-name NAME   the snapshot images' registry name (default registry.agentbox.test)
  --registry-url URL     where --registry-name is reached (e.g. http://127.0.0.1:5000); NAME=URL for
                         another registry; repeatable. A name with no URL is reached at https://NAME
  --tmp-dir DIR          where a commit spools the container's changes (default: the system's); the
                         spool a crashed run left there is removed at start
  --commit-timeout-s N   bound of one container's commit (default 600)
  --log-level L          pino level (default info)

  AGENTBOX_REGISTRY_AUTH=user:password (environment, optional): basic auth for --registry-name.
`;

/**
 * parseAgentFlags reads the agent's command line; a bad or missing value is an error that names
 * its flag (and never echoes a credential: none is taken from the command line).
 */
export function parseAgentFlags(
  argv: string[],
): { ok: true; value: AgentFlags } | { ok: false; error: string } {
  let values: Record<string, string | string[] | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        kubeconfig: { type: "string" },
        "field-selector": { type: "string" },
        "containerd-address": { type: "string", default: "/run/containerd/containerd.sock" },
        ctr: { type: "string", default: "ctr" },
        "registry-name": { type: "string", default: "registry.agentbox.test" },
        "registry-url": { type: "string", multiple: true, default: [] },
        "tmp-dir": { type: "string", default: tmpdir() },
        "commit-timeout-s": { type: "string", default: "600" },
        "log-level": { type: "string", default: "info" },
      },
    }));
  } catch (e) {
    return { ok: false, error: (e as Error).message };
  }
  const str = (k: string) => values[k] as string;
  const fieldSelector = str("field-selector");
  // One or more requirements on the node, ANDed: `spec.source.node!=a,spec.source.node!=b`.
  if (!fieldSelector || !/^spec\.source\.node!?=[^,\s]*(,spec\.source\.node!?=[^,\s]*)*$/.test(fieldSelector))
    return {
      ok: false,
      error:
        "--field-selector must be spec.source.node=NODE or spec.source.node!=NODE (several joined by commas)",
    };
  const registryName = str("registry-name");
  const endpoints: Record<string, string> = {};
  for (const entry of values["registry-url"] as string[]) {
    // An empty value (a Deployment's unset setting) names no URL: the registry is https://<name>.
    if (entry === "") continue;
    const eq = entry.indexOf("=");
    const [name, url] =
      eq > 0 && !entry.slice(0, eq).includes("/")
        ? [entry.slice(0, eq), entry.slice(eq + 1)]
        : [registryName, entry];
    if (!/^https?:\/\/[^/@]+\/?$/.test(url))
      return {
        ok: false,
        error: `--registry-url for ${name} must be http(s)://host[:port] with no credentials`,
      };
    endpoints[name] = url.replace(/\/$/, "");
  }
  const seconds = Number(str("commit-timeout-s"));
  if (!Number.isInteger(seconds) || seconds < 1)
    return {
      ok: false,
      error: `--commit-timeout-s must be a positive integer, got "${str("commit-timeout-s")}"`,
    };
  return {
    ok: true,
    value: {
      ...(values.kubeconfig ? { kubeconfig: str("kubeconfig") } : {}),
      fieldSelector,
      containerdAddress: str("containerd-address"),
      ctr: str("ctr"),
      registryName,
      endpoints,
      logLevel: str("log-level"),
      tmpDir: str("tmp-dir"),
      commitTimeoutMs: seconds * 1000,
    },
  };
}

/**
 * basicAuthFetch is fetch with basic auth on the requests to one base URL (the snapshot
 * registry's), from `user:password`; other requests go as they are.
 */
export function basicAuthFetch(base: string, auth: string, inner: typeof fetch = fetch): typeof fetch {
  const header = `Basic ${Buffer.from(auth).toString("base64")}`;
  return (input, init) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    if (!url.startsWith(`${base}/`)) return inner(input, init);
    const headers = new Headers(init?.headers);
    headers.set("authorization", header);
    return inner(input, { ...init, headers });
  };
}
