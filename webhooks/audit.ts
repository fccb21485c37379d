import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import * as v from "valibot";
import { parseWith } from "../lib/crd/parse-with.ts";
import type { Metrics } from "../lib/metrics/metrics.ts";
import type { Log } from "../lib/util/log.ts";
import { requireToken } from "./require-token.ts";

/** AuditEventList is the part of an audit.k8s.io/v1 EventList the sink relies on. */
const AuditEventList = v.looseObject({
  apiVersion: v.literal("audit.k8s.io/v1", 'must be "audit.k8s.io/v1"'),
  kind: v.literal("EventList", 'must be "EventList"'),
  items: v.array(
    v.looseObject({
      auditID: v.string(),
      verb: v.string(),
      stageTimestamp: v.optional(v.string()),
      objectRef: v.optional(
        v.looseObject({
          resource: v.optional(v.string()),
          subresource: v.optional(v.string()),
          namespace: v.optional(v.string()),
          name: v.optional(v.string()),
        }),
      ),
    }),
  ),
});
export type AuditEventList = v.InferOutput<typeof AuditEventList>;

export interface AuditDeps {
  callbackToken: string;
  logger: Log;
  /** metrics count the events and their lag (from the audited request's completion to now). */
  metrics?: Metrics;
  /** onEvents receives each authenticated, well-formed batch; the reconcile steps hang off it. */
  onEvents?: (list: AuditEventList) => void;
}

/**
 * auditRoutes is the apiserver's audit webhook sink. It authenticates the apiserver by bearer
 * token, validates the EventList and answers at once; what the events trigger runs after the
 * answer, so a slow step never backs up the apiserver's audit buffer.
 */
export function auditRoutes(deps: AuditDeps): Hono {
  const app = new Hono();
  app.use("*", requireToken(deps.callbackToken));
  app.use("*", bodyLimit({ maxSize: 16 * 1024 * 1024 }));
  app.post("/", async (c) => {
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      return c.json({ error: { code: "BadRequest", message: "body is not valid JSON" } }, 400);
    }
    const list = parseWith(AuditEventList, body);
    if (!list.ok) {
      return c.json(
        {
          error: {
            code: "BadRequest",
            message: "body is not an audit.k8s.io/v1 EventList",
            fields: list.issues,
          },
        },
        400,
      );
    }
    deps.logger.debug({ events: list.value.items.length }, "audit batch");
    if (deps.metrics) {
      deps.metrics.auditEvents.inc(list.value.items.length);
      const now = Date.now();
      for (const e of list.value.items) {
        const at = Date.parse(e.stageTimestamp ?? "");
        if (Number.isFinite(at)) deps.metrics.auditLag.observe(Math.max(0, now - at) / 1000);
      }
    }
    deps.onEvents?.(list.value);
    return c.json({ accepted: list.value.items.length });
  });
  return app;
}
