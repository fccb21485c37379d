// The sandbox router's settings as the Node host's environment gives them (AGENTBOX_DATA_PLANE_*),
// validated with the host's other settings (config.ts); kept apart from settings.ts so the
// router's own process never loads the schemas.
import * as v from "valibot";
import { Port } from "../setting-values.ts";

/** DATA_PLANE_ENV are the router's entries of the host's settings schema (config.ts ENV). */
export const DATA_PLANE_ENV = {
  AGENTBOX_DATA_PLANE_PORT: v.optional(Port),
  AGENTBOX_DATA_PLANE_TLS_PORT: v.optional(
    v.pipe(
      v.string(),
      v.check(
        (s) => s === "off" || (/^[1-9][0-9]{0,4}$/.test(s) && Number(s) <= 65535),
        "must be a port or off",
      ),
      v.transform((s) => (s === "off" ? ("off" as const) : Number(s))),
    ),
  ),
  AGENTBOX_DATA_PLANE_HOST: v.optional(v.string()),
  AGENTBOX_DATA_PLANE_NAMES: v.optional(v.string()),
  AGENTBOX_DATA_PLANE_NAMESPACE: v.optional(
    v.pipe(v.string(), v.regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, "must be a namespace name")),
  ),
  AGENTBOX_DATA_PLANE_NODE_FLAGS: v.optional(
    v.pipe(
      v.string(),
      v.regex(
        /^\s*(thread|(--[A-Za-z0-9-]+(=\S+)?\s*)*)\s*$/,
        'must be "thread" or Node flags, each starting with "--"',
      ),
    ),
  ),
};
