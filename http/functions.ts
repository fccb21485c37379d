import { vValidator } from "@hono/valibot-validator";
import { type Context, Hono } from "hono";
import * as v from "valibot";
import type { Log } from "../lib/util/log.ts";
import { requireToken } from "../webhooks/require-token.ts";

const DNS_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const Name = v.pipe(v.string(), v.maxLength(253), v.regex(DNS_NAME, "must be a Kubernetes object name"));
const Target = v.object({ namespace: Name, pool: Name });
const EnvTarget = v.object({ namespace: Name, env: Name });
const MemberTarget = v.object({ namespace: Name, env: Name, member: Name });

/** StepRunner runs one named step (or "reconcile": all of them) for a pool and reports what it did. */
export type StepRunner = (step: string, namespace: string, pool: string) => Promise<unknown>;

/** EnvRunner runs the Env step for one Env and reports what it did. */
export type EnvRunner = (namespace: string, env: string) => Promise<unknown>;

/** MemberRunner refreshes one member of an Env from its template and reports what it did. */
export type MemberRunner = (namespace: string, env: string, member: string) => Promise<unknown>;

export interface FunctionsDeps {
  /** Bearer token of operators (admin); required for every call. */
  adminToken: string;
  steps: readonly string[];
  run: StepRunner;
  /** runEnv serves POST /functions/reconcile-env. */
  runEnv?: EnvRunner;
  /** refreshMember serves POST /functions/refresh-member. */
  refreshMember?: MemberRunner;
  log: Log;
}

/** invalidQuery answers a query that failed validation with every field that is wrong. */
function invalidQuery(result: { success: boolean; issues?: readonly v.BaseIssue<unknown>[] }, c: Context) {
  if (result.success) return;
  const fields = (result.issues ?? []).map((i) => ({ path: v.getDotPath(i) ?? "", message: i.message }));
  return c.json({ error: { code: "BadRequest", message: "invalid query parameters", fields } }, 400);
}

/**
 * refusal answers what a step refused (StepRefused: 409, the request cannot be done to that
 * object), did not find (NotFound: 404) or could not do for lack of configuration (Misconfigured:
 * 500, naming the setting);
 * errors cross the reconciler thread by name, so the name is what is checked.
 */
function refusal(c: Context, err: unknown) {
  const name = err instanceof Error ? err.name : "";
  const message = err instanceof Error ? err.message : String(err);
  if (name === "StepRefused") return c.json({ error: { code: "Refused", message } }, 409);
  if (name === "NotFound") return c.json({ error: { code: "NotFound", message } }, 404);
  if (name === "Misconfigured") return c.json({ error: { code: "Misconfigured", message } }, 500);
  throw err;
}

/**
 * functionsRoutes is the manual trigger: `POST /functions/<step>?namespace=&pool=` runs that
 * step for that pool now, `POST /functions/reconcile-env?namespace=&env=` runs the Env step and
 * `POST /functions/refresh-member?namespace=&env=&member=` refreshes an Env member from its
 * template (an unknown Env or member: 404); each answers with the report. Unknown steps get a 404 listing the valid ones, bad query
 * parameters a 400 naming them, a refused step a 409 and a missing setting a 500 saying which.
 */
export function functionsRoutes(deps: FunctionsDeps): Hono {
  const app = new Hono();
  app.use("*", requireToken(deps.adminToken));
  const envRoutes = [
    ...(deps.runEnv ? ["reconcile-env"] : []),
    ...(deps.refreshMember ? ["refresh-member"] : []),
  ];
  app.get("/", (c) => c.json({ steps: deps.steps, ...(envRoutes.length ? { env: envRoutes } : {}) }));
  const runEnv = deps.runEnv;
  if (runEnv)
    app.post("/reconcile-env", vValidator("query", EnvTarget, invalidQuery), async (c) => {
      const { namespace, env } = c.req.valid("query");
      try {
        const report = await runEnv(namespace, env);
        deps.log.info({ env: `${namespace}/${env}` }, "manual trigger: reconcile-env");
        return c.json({ step: "reconcile-env", namespace, env, report });
      } catch (err) {
        return refusal(c, err);
      }
    });
  const refreshMember = deps.refreshMember;
  if (refreshMember)
    app.post("/refresh-member", vValidator("query", MemberTarget, invalidQuery), async (c) => {
      const { namespace, env, member } = c.req.valid("query");
      try {
        const report = await refreshMember(namespace, env, member);
        deps.log.info({ env: `${namespace}/${env}`, member }, "manual trigger: refresh-member");
        return c.json({ step: "refresh-member", namespace, env, member, report });
      } catch (err) {
        return refusal(c, err);
      }
    });
  app.post("/:step", vValidator("query", Target, invalidQuery), async (c) => {
    const step = c.req.param("step") ?? "";
    if (!deps.steps.includes(step)) {
      return c.json({ error: { code: "NotFound", message: `no step "${step}"`, choices: deps.steps } }, 404);
    }
    const { namespace, pool } = c.req.valid("query");
    try {
      const report = await deps.run(step, namespace, pool);
      deps.log.info({ step, pool: `${namespace}/${pool}` }, "manual trigger");
      return c.json({ step, namespace, pool, report });
    } catch (err) {
      return refusal(c, err);
    }
  });
  return app;
}
