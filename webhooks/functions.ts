import { vValidator } from "@hono/valibot-validator";
import { Hono } from "hono";
import * as v from "valibot";
import type { Log } from "../lib/log.ts";
import { requireToken } from "./require-token.ts";

const DNS_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const Name = v.pipe(v.string(), v.maxLength(253), v.regex(DNS_NAME, "must be a Kubernetes object name"));
const Target = v.object({ namespace: Name, pool: Name });

/** StepRunner runs one named step (or "reconcile": all of them) for a pool and reports what it did. */
export type StepRunner = (step: string, namespace: string, pool: string) => Promise<unknown>;

export interface FunctionsDeps {
  /** Bearer token of operators (admin); required for every call. */
  adminToken: string;
  steps: readonly string[];
  run: StepRunner;
  log: Log;
}

/**
 * functionsRoutes is the manual trigger: `POST /functions/<step>?namespace=&pool=` runs that
 * step for that pool now and answers with its report. Unknown steps get a 404 listing the valid
 * ones; bad query parameters a 400 naming them.
 */
export function functionsRoutes(deps: FunctionsDeps): Hono {
  const app = new Hono();
  app.use("*", requireToken(deps.adminToken));
  app.get("/", (c) => c.json({ steps: deps.steps }));
  app.post(
    "/:step",
    vValidator("query", Target, (result, c) => {
      if (!result.success) {
        const fields = result.issues.map((i) => ({ path: v.getDotPath(i) ?? "", message: i.message }));
        return c.json({ error: { code: "BadRequest", message: "invalid query parameters", fields } }, 400);
      }
    }),
    async (c) => {
      const step = c.req.param("step");
      if (!deps.steps.includes(step)) {
        return c.json(
          { error: { code: "NotFound", message: `no step "${step}"`, choices: deps.steps } },
          404,
        );
      }
      const { namespace, pool } = c.req.valid("query");
      const report = await deps.run(step, namespace, pool);
      deps.log.info({ step, pool: `${namespace}/${pool}` }, "manual trigger");
      return c.json({ step, namespace, pool, report });
    },
  );
  return app;
}
