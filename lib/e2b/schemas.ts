// E2B's control-plane request shapes (their public OpenAPI spec, as the `e2b` SDK sends them), as
// valibot schemas. Unknown fields are ignored, as E2B's API does, so newer SDKs keep working; the
// features a warm pool cannot give (memory snapshots, volumes, MCP, domain egress rules) are
// refused by name instead of silently dropped; network rules take CIDR blocks and IPs (lib/egress).
import * as v from "valibot";
import { MAX_ENV_BYTES } from "../claims/schemas.ts";
import { EgressList } from "../egress/schemas.ts";

const WEEK = 604_800;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

const Seconds = (min: number, max: number) =>
  v.pipe(
    v.number("must be a number of seconds"),
    v.integer("must be a whole number of seconds"),
    v.minValue(min, `must be at least ${min}`),
    v.maxValue(max, `must be at most ${max}`),
  );

const notArray = (x: unknown) => !Array.isArray(x);
const Bool = v.boolean("must be true or false");

/**
 * NO_MEMORY says why a memory snapshot is refused: a pause here commits the sandbox's files as
 * an image layer; its memory and processes are not kept (CRIU cannot run on these nodes).
 */
export const NO_MEMORY =
  "memory snapshots are not kept by this control plane: a pause keeps the sandbox's files, not its memory or processes (ask with memory false or leave it out)";

/** NoMemory is a `memory`-like field: false or absent (null) only, true is refused (NO_MEMORY). */
const NoMemory = v.optional(
  v.nullable(
    v.pipe(
      Bool,
      v.check((x) => x === false, NO_MEMORY),
    ),
  ),
);
const StringMap = (key: v.GenericSchema<string>, max: number) =>
  v.pipe(
    v.unknown(),
    v.check(notArray, "must be an object of strings"),
    v.record(key, v.string("must be a string"), "must be an object of strings"),
    v.check((r) => Object.keys(r).length <= max, `must have at most ${max} entries`),
  );

/** unsupported refuses a feature when it is asked for (present and not null/false/empty). */
const unsupported = (what: string, hint = "") =>
  v.optional(
    v.pipe(
      v.unknown(),
      v.check(
        (x) =>
          x === null ||
          x === false ||
          x === "" ||
          (Array.isArray(x) && x.length === 0) ||
          (typeof x === "object" && x !== null && Object.keys(x).length === 0),
        `${what} is not supported by this control plane${hint}`,
      ),
    ),
  );

/** unsupportedNetwork refuses a network field not built here, saying what egress rules take. */
const unsupportedNetwork = (what: string) =>
  unsupported(what, "; egress rules take CIDR blocks and IP addresses in allowOut and denyOut");

/** egressFields are the egress rules' fields a create's `network` and an update share. */
const egressFields = {
  allowOut: v.optional(v.nullable(EgressList("allowOut"))),
  denyOut: v.optional(v.nullable(EgressList("denyOut"))),
  egressProxy: unsupportedNetwork("egressProxy"),
  rules: unsupportedNetwork("rules (per-domain request transforms)"),
};

/**
 * Network is E2B's SandboxNetworkConfig on create: egress rules as CIDR blocks and IPs (domain
 * names, per-domain rules, an egress proxy and a host mask would need an egress proxy: refused by
 * name), and allowPublicTraffic (false: the sandbox's ports need its traffic token).
 */
const Network = v.optional(
  v.nullable(
    v.pipe(
      v.unknown(),
      v.check(notArray, "must be a JSON object"),
      v.looseObject(
        {
          ...egressFields,
          allowPublicTraffic: v.optional(v.nullable(v.boolean("must be true or false"))),
          maskRequestHost: unsupportedNetwork("maskRequestHost"),
          httpsPorts: unsupportedNetwork("httpsPorts"),
        },
        "must be a JSON object",
      ),
    ),
  ),
);

/**
 * NetworkUpdate is E2B's SandboxNetworkUpdateConfig (`PUT /sandboxes/{id}/network`): it replaces
 * the egress rules, an omitted field is cleared; `allow_internet_access` in snake_case, as the SDK
 * sends it.
 */
export const NetworkUpdate = v.optional(
  v.pipe(
    v.unknown(),
    v.check(notArray, "must be a JSON object"),
    v.looseObject(
      {
        ...egressFields,
        allow_internet_access: v.optional(v.nullable(v.boolean("must be true or false"))),
      },
      "must be a JSON object",
    ),
  ),
  {},
);
export type NetworkUpdate = v.InferOutput<typeof NetworkUpdate>;

const newSandbox = (defaultTimeout: number) =>
  v.pipe(
    v.unknown(),
    v.check(notArray, "must be a JSON object"),
    v.looseObject(
      {
        templateID: v.pipe(v.string("must be a string (a template)"), v.minLength(1, "must not be empty")),
        timeout: v.optional(Seconds(1, WEEK), defaultTimeout),
        metadata: v.optional(StringMap(v.pipe(v.string(), v.minLength(1), v.maxLength(63)), 32)),
        envVars: v.optional(
          v.pipe(
            StringMap(v.pipe(v.string(), v.regex(ENV_NAME, "must be an environment variable name")), 100),
            v.check((r) => JSON.stringify(r).length <= MAX_ENV_BYTES, "must be at most 32 KiB in all"),
          ),
        ),
        autoPause: v.optional(v.nullable(Bool), false),
        autoPauseMemory: NoMemory,
        autoResume: v.pipe(
          v.optional(
            v.nullable(
              v.looseObject(
                { enabled: v.optional(v.nullable(Bool), false) },
                "must be a JSON object with enabled",
              ),
            ),
          ),
          v.transform((x) => x?.enabled === true),
        ),
        volumeMounts: unsupported("volumeMounts"),
        network: Network,
        mcp: unsupported("mcp"),
        iam: unsupported("iam"),
        allow_internet_access: v.optional(v.nullable(v.boolean("must be true or false"))),
      },
      "must be a JSON object",
    ),
    v.forward(
      v.check(
        (r) => !r.autoResume,
        "is not supported: a paused sandbox keeps its files, not its memory, and resumes with Sandbox.connect (as E2B's keepMemory: false)",
      ),
      ["autoResume"],
    ),
    v.transform((r) => ({ ...r, autoPause: r.autoPause === true })),
  );

/** NewSandboxV2 is `POST /v2/sandboxes` (lifetime default 300 s). */
export const NewSandboxV2 = newSandbox(300);
/** NewSandbox is the deprecated `POST /sandboxes` (lifetime default 15 s). */
export const NewSandbox = newSandbox(15);
export type NewSandbox = v.InferOutput<typeof NewSandboxV2>;

/** SandboxTimeoutRequest sets the lifetime to `timeout` seconds from now. */
export const SandboxTimeoutRequest = v.looseObject(
  { timeout: Seconds(0, WEEK) },
  "must be a JSON object with a timeout",
);

/** SandboxRefreshRequest extends the lifetime to at least `duration` seconds from now. */
export const SandboxRefreshRequest = v.optional(
  v.looseObject({ duration: v.optional(Seconds(0, 3600), 60) }, "must be a JSON object"),
  { duration: 60 },
);

/**
 * ConnectSandbox is `POST /sandboxes/{id}/connect` (timeout required): a running sandbox's
 * lifetime is extended to it, a paused one resumes with it. `memory` (E2B's "restore memory")
 * may only be false or absent: files are what a resume brings back.
 */
export const ConnectSandbox = v.looseObject(
  { timeout: Seconds(0, WEEK), memory: NoMemory },
  "must be a JSON object with a timeout",
);
/**
 * ConnectSandboxV2 is `POST /v2/sandboxes/{id}/connect`: timeout absent is 300 s for a running
 * sandbox (CONNECT_V2_SECONDS) and, for a paused one, the lifetime it had left; `memory` as
 * ConnectSandbox's.
 */
export const ConnectSandboxV2 = v.optional(
  v.looseObject({ timeout: v.optional(Seconds(0, WEEK)), memory: NoMemory }, "must be a JSON object"),
  {},
);
export type ConnectRequest = { timeout?: number | undefined };
/** CONNECT_V2_SECONDS is the lifetime a v2 connect without a timeout extends a running sandbox to. */
export const CONNECT_V2_SECONDS = 300;

/**
 * PauseSandbox is `POST /sandboxes/{id}/pause`: `memory` may only be false or absent (the SDK's
 * pause sends it absent unless keepMemory is set).
 */
export const PauseSandbox = v.optional(v.looseObject({ memory: NoMemory }, "must be a JSON object"), {});

/**
 * ResumeSandbox is `POST /sandboxes/{id}/resume`: the lifetime from the resume (absent: what it
 * had left at the pause) and E2B's deprecated autoPause (accepted, not acted on: the create's
 * autoPause holds).
 */
export const ResumeSandbox = v.optional(
  v.looseObject(
    { timeout: v.optional(Seconds(1, WEEK)), autoPause: v.optional(v.nullable(Bool)) },
    "must be a JSON object",
  ),
  {},
);

/**
 * ListSandboxesV2Query is `GET /v2/sandboxes`: metadata ("k=v&k2=v2", each part URL-encoded),
 * state (running, paused; comma-separated), template, a page of `limit` (1..100, default 100)
 * after `nextToken`. Order and startedAfter are accepted.
 */
export const ListSandboxesV2Query = v.looseObject({
  metadata: v.optional(v.string()),
  state: v.optional(
    v.pipe(
      v.string(),
      v.transform((s) => s.split(",").filter(Boolean)),
      v.array(v.picklist(["running", "paused"], "must list running and/or paused")),
    ),
  ),
  template: v.optional(v.string()),
  limit: v.optional(
    v.pipe(
      v.string(),
      v.regex(/^\d{1,3}$/, "must be 1 to 100"),
      v.transform(Number),
      v.minValue(1),
      v.maxValue(100),
    ),
    "100",
  ),
  nextToken: v.optional(v.pipe(v.string(), v.minLength(1))),
  startedAfter: v.optional(v.pipe(v.string(), v.isoTimestamp("must be an RFC 3339 time"))),
  order: v.optional(v.picklist(["asc", "desc"], "must be asc or desc")),
});

/**
 * metadataQuery reads E2B's metadata filter: a query string "k=v&k2=v2" (itself URL-encoded in
 * the outer query), keys and values URL-encoded once more.
 */
export function metadataQuery(text: string): Record<string, string> {
  const filter: Record<string, string> = {};
  for (const [key, value] of new URLSearchParams(text))
    filter[decodeURIComponent(key)] = decodeURIComponent(value);
  return filter;
}
