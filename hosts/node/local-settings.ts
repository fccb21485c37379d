// `npm start`'s settings from the environment: the part of the in-cluster host's settings
// (config.ts HOST_ENV) a developer machine may change, validated by the same schema, so a bad
// value stops `npm start` with the variable named, as it stops `npm run serve`. The rest (TLS,
// tokens, keys, ports) `npm start` makes itself, next to the local cluster.
import * as v from "valibot";
import { parseWith } from "../../lib/crd/parse-with.ts";
import { HOST_ENV } from "./config.ts";
import { DATA_PLANE_PORT, type DataPlaneSettings, nodeFlagsOf } from "./data-plane/settings.ts";

/** LOCAL_ENV is HOST_ENV's entries that `npm start` reads. */
const LOCAL_ENV = v.pick(HOST_ENV, [
  "AGENTBOX_TICK_SECONDS",
  "AGENTBOX_CONSOLE_SAMPLE_SECONDS",
  "AGENTBOX_SANDBOX_DOMAIN",
  "AGENTBOX_DATA_PLANE_PORT",
  "AGENTBOX_DATA_PLANE_TLS_PORT",
  "AGENTBOX_DATA_PLANE_NODE_FLAGS",
  "AGENTBOX_CLUSTER_ID",
  "AGENTBOX_INSTANCE_ID",
  "AGENTBOX_ADOPT_POOLS",
]);

/** LocalSettings are `npm start`'s host settings that the environment may change. */
export interface LocalSettings {
  tickSeconds: number;
  consoleSampleSeconds: number;
  sandboxDomain?: string;
  /** dataPlane: the router on 127.0.0.1, plain HTTP (8080), TLS only when its port is set. */
  dataPlane: DataPlaneSettings;
  clusterId?: string;
  instanceId?: string;
  adoptPools: boolean;
}

/** readLocalSettings validates `npm start`'s environment; errors name the variable. */
export function readLocalSettings(
  env: Record<string, string | undefined>,
): { ok: true; value: LocalSettings } | { ok: false; errors: string[] } {
  const parsed = parseWith(LOCAL_ENV, env);
  if (!parsed.ok) return { ok: false, errors: parsed.issues.map((i) => `${i.path}: ${i.message}`) };
  const e = parsed.value;
  const tls = e.AGENTBOX_DATA_PLANE_TLS_PORT;
  return {
    ok: true,
    value: {
      tickSeconds: e.AGENTBOX_TICK_SECONDS,
      consoleSampleSeconds: e.AGENTBOX_CONSOLE_SAMPLE_SECONDS,
      ...(e.AGENTBOX_SANDBOX_DOMAIN ? { sandboxDomain: e.AGENTBOX_SANDBOX_DOMAIN } : {}),
      dataPlane: {
        host: "127.0.0.1",
        plainPort: e.AGENTBOX_DATA_PLANE_PORT ?? DATA_PLANE_PORT,
        ...(tls !== undefined && tls !== "off" ? { tlsPort: tls } : {}),
        ...(e.AGENTBOX_DATA_PLANE_NODE_FLAGS !== undefined
          ? { runsIn: nodeFlagsOf(e.AGENTBOX_DATA_PLANE_NODE_FLAGS) }
          : {}),
      },
      ...(e.AGENTBOX_CLUSTER_ID ? { clusterId: e.AGENTBOX_CLUSTER_ID } : {}),
      ...(e.AGENTBOX_INSTANCE_ID ? { instanceId: e.AGENTBOX_INSTANCE_ID } : {}),
      adoptPools: e.AGENTBOX_ADOPT_POOLS,
    },
  };
}
