// The request bodies and query strings of the /v1 sandbox API, as valibot schemas: they type the
// routes and, through parseWith, turn bad input into field-path issues (`envVars[1X]: …`) for a
// 400. Bodies are strict (an unknown field is a typo the caller wants to hear about); queries
// ignore unknown parameters (cache busters, tracing). Numbers in bodies are seconds.
import * as v from "valibot";
import { SANDBOX_PHASE } from "../crd/keys.ts";
import { EgressList } from "../egress/schemas.ts";
import { isLabelValue } from "../kube/label-value.ts";
import { rfc3339 } from "../util/time.ts";
import { isMetadataFilterError, parseMetadataFilter } from "./sandbox-view.ts";

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const RFC3339 =
  /^(\d{4})-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/;
const WEEK = 604_800;
/** MAX_ENV_BYTES bounds a claim's env vars as JSON: sealed, they live in a pod annotation. */
export const MAX_ENV_BYTES = 32 * 1024;

const notArray = (x: unknown) => !Array.isArray(x);

/** strictMessage words the three issues of a strict object: wrong type, missing, unknown field. */
function strictMessage(issue: v.StrictObjectIssue): string {
  if (issue.expected === "never") return "unknown field";
  if (issue.expected === "Object") return "must be a JSON object";
  return "required";
}

/**
 * body is a strict JSON object. valibot's object schemas also take arrays (as objects with keys
 * "0", "1", …), so arrays are refused first, as any other non-object.
 */
const body = <const TEntries extends v.ObjectEntries>(entries: TEntries) =>
  v.pipe(v.unknown(), v.check(notArray, "must be a JSON object"), v.strictObject(entries, strictMessage));

/** stringMap is a JSON object of strings (arrays refused, as in body). */
const stringMap = <
  const TKey extends v.GenericSchema<string>,
  const TValue extends v.GenericSchema<unknown, string>,
>(
  key: TKey,
  value: TValue,
  message: string,
) => v.pipe(v.unknown(), v.check(notArray, message), v.record(key, value, message));

const text = (what: string) => v.string(`must be a string (${what})`);

/** PoolRef is `namespace/name` of a SandboxPool. */
const ObjectRef = (kind: string) =>
  v.pipe(
    text(`"namespace/name" of a ${kind}`),
    v.check((s) => {
      const [namespace = "", name = "", ...rest] = s.split("/");
      return rest.length === 0 && DNS_LABEL.test(namespace) && DNS_SUBDOMAIN.test(name);
    }, `must be "namespace/name" of a ${kind}, e.g. "team-a/python"`),
  );
const PoolRef = ObjectRef("SandboxPool");
const EnvRef = ObjectRef("SandboxEnv");

const ResourceName = (what: string) =>
  v.pipe(text(what), v.regex(DNS_SUBDOMAIN, `must be the name of a ${what} (lowercase DNS subdomain)`));

const Image = v.pipe(
  text("an image reference"),
  v.regex(/^\S+$/, "must be an image reference without spaces, e.g. registry.example/app:1.2"),
);

const Seconds = (min: number, max: number, what: string) =>
  v.pipe(
    v.number(`must be a number of seconds (${what})`),
    v.integer("must be a whole number of seconds"),
    v.minValue(min, `must be at least ${min} seconds`),
    v.maxValue(max, `must be at most ${max} seconds`),
  );

const maxEntries = (n: number) =>
  v.check((r: Record<string, string>) => Object.keys(r).length <= n, `must have at most ${n} entries`);

/**
 * NetworkUpdateRequest is the body of `PUT /v1/sandboxes/{id}/network`: the sandbox's egress rules
 * (CIDR blocks and IPs; allowOut wins over denyOut; allowInternetAccess false denies all of the
 * internet), replacing the current ones: an omitted field is cleared, `{}` returns the sandbox to
 * its namespace's default egress.
 */
export const NetworkUpdateRequest = body({
  allowOut: v.optional(EgressList("allowOut")),
  denyOut: v.optional(EgressList("denyOut")),
  allowInternetAccess: v.optional(v.boolean("must be true or false")),
});
export type NetworkUpdateRequest = v.InferOutput<typeof NetworkUpdateRequest>;

/** SandboxNetworkRequest is a create's `network`: the egress rules, and allowPublicTraffic (false: its ports need its traffic token). */
const SandboxNetworkRequest = body({
  allowOut: v.optional(EgressList("allowOut")),
  denyOut: v.optional(EgressList("denyOut")),
  allowInternetAccess: v.optional(v.boolean("must be true or false")),
  allowPublicTraffic: v.optional(v.boolean("must be true or false")),
});

/**
 * CreateSandboxRequest is the body of `POST /v1/sandboxes`: a pool (`namespace/name`), an Env
 * (`namespace/name`; a member is chosen) or a template (an Env built on that SandboxTemplate,
 * else a pool created from it), exactly one of them; optionally
 * an image for the pool's first container or per-container images (not both), environment
 * variables, caller metadata, timeouts in seconds (idleTimeout 0 = none; timeout is the
 * lifetime: the sandbox is released that long after the claim, however active), whether to wait
 * (at most waitTimeout seconds) until the sandbox runs, and the instance shape (instanceType,
 * optionally multiplier) of the Env member to serve it, and its network rules (`network`: its
 * NetworkPolicy is written before the claim; lib/egress).
 */
export const CreateSandboxRequest = v.pipe(
  body({
    pool: v.optional(PoolRef),
    env: v.optional(EnvRef),
    template: v.optional(ResourceName("SandboxTemplate")),
    image: v.optional(Image),
    containerImages: v.optional(
      v.pipe(
        stringMap(
          v.pipe(v.string(), v.regex(DNS_LABEL, "must be a container name (lowercase DNS label)")),
          Image,
          "must be an object of container name → image",
        ),
        v.check((r) => Object.keys(r).length > 0, "must name at least one container"),
      ),
    ),
    envVars: v.optional(
      v.pipe(
        stringMap(
          v.pipe(
            v.string(),
            v.regex(ENV_NAME, "must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*)"),
          ),
          text("the variable's value"),
          "must be an object of name → value",
        ),
        maxEntries(100),
        v.check(
          (r) => JSON.stringify(r).length <= MAX_ENV_BYTES,
          "must be at most 32 KiB in all (they travel in a pod annotation)",
        ),
      ),
    ),
    metadata: v.optional(
      v.pipe(
        stringMap(
          v.pipe(
            v.string(),
            v.minLength(1, "metadata keys must not be empty"),
            v.maxLength(63, "metadata keys must be at most 63 characters"),
          ),
          v.pipe(text("a metadata value"), v.maxLength(256, "must be at most 256 characters")),
          "must be an object of key → value",
        ),
        maxEntries(32),
      ),
    ),
    idleTimeout: v.optional(Seconds(0, WEEK, "0 = no idle timeout, at most 7 days")),
    timeout: v.optional(Seconds(1, WEEK, "the sandbox's lifetime, at most 7 days")),
    startupTimeout: v.optional(Seconds(1, 3600, "at most 1 hour")),
    wait: v.optional(v.boolean("must be true or false")),
    waitTimeout: v.optional(Seconds(0, 300, "at most 5 minutes")),
    instanceType: v.optional(
      v.pipe(
        text("an instance type of the catalog"),
        v.regex(
          /^[-._a-zA-Z0-9]{1,253}$/,
          "must be an instance type name (a key of the instance type catalog)",
        ),
      ),
    ),
    multiplier: v.optional(
      v.pipe(
        v.number("must be a whole number (the instance type's multiplier)"),
        v.integer("must be a whole number (the instance type's multiplier)"),
        v.minValue(1, "must be at least 1"),
        v.maxValue(1024, "must be at most 1024"),
      ),
    ),
    network: v.optional(SandboxNetworkRequest),
  }),
  v.partialCheck(
    [["instanceType"], ["multiplier"]],
    (r) => r.multiplier === undefined || r.instanceType !== undefined,
    '"multiplier" needs "instanceType": it multiplies an instance type',
  ),
  v.partialCheck(
    [["pool"], ["env"], ["template"]],
    (r) => [r.pool, r.env, r.template].filter((x) => x !== undefined).length === 1,
    (issue) =>
      [issue.input.pool, issue.input.env, issue.input.template].every((x) => x === undefined)
        ? 'one of "pool" (namespace/name), "env" (namespace/name) or "template" (a SandboxTemplate name) is required'
        : 'give only one of "pool", "env" and "template"',
  ),
  v.partialCheck(
    [["image"], ["containerImages"]],
    (r) => r.image === undefined || r.containerImages === undefined,
    'give either "image" (the main container) or "containerImages", not both',
  ),
);
export type CreateSandboxRequest = v.InferOutput<typeof CreateSandboxRequest>;

/** QueryInt is a whole number in a query string, between min and max. */
const QueryInt = (min: number, max: number) =>
  v.pipe(
    v.string(),
    v.regex(/^\d{1,9}$/, `must be a whole number from ${min} to ${max}`),
    v.transform(Number),
    v.minValue(min, `must be at least ${min}`),
    v.maxValue(max, `must be at most ${max}`),
  );

/**
 * ListSandboxesQuery is the query of `GET /v1/sandboxes`: filters on pool (`namespace/name`),
 * phase and caller metadata (`k=v,k2=v2`, every pair must match; read it with
 * parseMetadataFilter), and a page of `limit` (1..500, default 100) after the `continue` token
 * of the previous page.
 */
export const ListSandboxesQuery = v.object({
  pool: v.optional(PoolRef),
  phase: v.optional(
    v.picklist(
      [SANDBOX_PHASE.STARTING, SANDBOX_PHASE.RUNNING, SANDBOX_PHASE.STOPPING, SANDBOX_PHASE.FAILED, "paused"],
      "must be one of starting, running, stopping, failed, paused",
    ),
  ),
  metadata: v.optional(
    v.pipe(
      v.string(),
      v.rawCheck(({ dataset, addIssue }) => {
        if (!dataset.typed) return;
        const filter = parseMetadataFilter(dataset.value);
        if (isMetadataFilterError(filter)) addIssue({ message: filter.error });
      }),
    ),
  ),
  limit: v.optional(QueryInt(1, 500), "100"),
  continue: v.optional(v.pipe(v.string(), v.minLength(1, "must not be empty"))),
});
export type ListSandboxesQuery = v.InferOutput<typeof ListSandboxesQuery>;

/**
 * TimeoutRequest is the body of `POST /v1/sandboxes/{id}/timeout`: a new lifetime (`timeout`,
 * seconds from now, as E2B's) and/or a new idle timeout (seconds, 0 = none); at least one.
 */
export const TimeoutRequest = v.pipe(
  body({
    timeout: v.optional(Seconds(1, WEEK, "the sandbox's lifetime from now, at most 7 days")),
    idleTimeout: v.optional(Seconds(0, WEEK, "0 = no idle timeout, at most 7 days")),
  }),
  v.check(
    (r) => r.timeout !== undefined || r.idleTimeout !== undefined,
    'give "timeout" (lifetime from now, seconds) and/or "idleTimeout" (seconds, 0 = none)',
  ),
);
export type TimeoutRequest = v.InferOutput<typeof TimeoutRequest>;

/** validDay rejects days past the month's end (Date.parse rolls 02-30 over into March). */
function validDay(s: string): boolean {
  const m = RFC3339.exec(s);
  if (!m) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  return day <= new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/**
 * Rfc3339Bound is a time bound normalised to the history store's form (UTC, whole seconds, "Z"),
 * which compares as text. A fraction is rounded up: records have whole seconds, so
 * `t >= from` and `t < to` keep their meaning.
 */
const Rfc3339Bound = v.pipe(
  v.string(),
  v.check(validDay, "must be an RFC 3339 time, e.g. 2026-05-10T12:00:00Z"),
  v.transform((s) => rfc3339(new Date(Math.ceil(Date.parse(s) / 1000) * 1000))),
);

const LabelValue = (what: string) =>
  v.pipe(v.string(), v.check(isLabelValue, `must be a ${what} (a label value: letters, digits, -_.)`));

/**
 * HistoryQuery is the query of `GET /v1/history`, the store's HistoryQuery: namespace, pool
 * (a pool name, with namespace), team, user, terminated in [from, to) (RFC 3339), `limit`
 * (1..1000, default 100) records after the `after` cursor of the previous page.
 */
export const HistoryQuery = v.pipe(
  v.object({
    namespace: v.optional(v.pipe(v.string(), v.regex(DNS_LABEL, "must be a namespace name"))),
    pool: v.optional(ResourceName("SandboxPool")),
    team: v.optional(LabelValue("team")),
    user: v.optional(LabelValue("user")),
    from: v.optional(Rfc3339Bound),
    to: v.optional(Rfc3339Bound),
    limit: v.optional(QueryInt(1, 1000), "100"),
    after: v.optional(v.pipe(v.string(), v.minLength(1, "must not be empty"))),
  }),
  v.partialCheck(
    [["from"], ["to"]],
    (q) => q.from === undefined || q.to === undefined || q.from < q.to,
    '"from" must be before "to"',
  ),
);
export type HistoryQuery = v.InferOutput<typeof HistoryQuery>;
