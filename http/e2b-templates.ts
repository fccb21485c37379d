import { type Context, Hono } from "hono";
import { listTargets } from "../functions/api/list-targets.ts";
import type { HostDeps } from "../functions/host-deps.ts";
import type { E2bSettings } from "../lib/e2b/answers.ts";
import {
  type E2bTemplate,
  e2bTemplates,
  e2bTemplateWithBuilds,
  findE2bTemplate,
} from "../lib/e2b/template-answers.ts";
import type { E2bEnv } from "./e2b.ts";
import { fail } from "./e2b-fail.ts";
import { notImplemented } from "./e2b-unsupported.ts";

type C = Context<E2bEnv>;

/** HOW_TEMPLATES_ARE_ADDED is what a template write answers: templates are Kubernetes resources here. */
export const HOW_TEMPLATES_ARE_ADDED =
  "templates are SandboxTemplate resources (agents.navix.sh/v1alpha1) applied with kubectl, e.g. " +
  "infra/samples/10-sandbox-template.yaml; a SandboxPool or SandboxEnv made from one serves its sandboxes";

/**
 * e2bTemplatesRoutes serve E2B's templates: what the key's team may name as a create's templateID
 * (its SandboxTemplates and, as "namespace/name", the pools it may claim from: listTargets, the
 * rule a create follows), as E2B's Template. Another team's template is a 404, like a missing one,
 * so the SDK's Template.exists says false for it. Builds, uploads, updates, deletes and tag writes
 * answer 501 saying how templates are added here, counted in agentbox_e2b_unsupported_total.
 */
export function e2bTemplatesRoutes(deps: HostDeps, settings: E2bSettings): Hono<E2bEnv> {
  const app = new Hono<E2bEnv>();
  const listed = async (c: C) =>
    e2bTemplates(await listTargets(deps, c.get("tenant")), c.get("tenant"), deps.clusterId, settings);
  /** found answers with the team's template a path parameter names, or E2B's 404. */
  const found = async (c: C, param: string, answer: (t: E2bTemplate) => unknown) => {
    const name = c.req.param(param) ?? "";
    const t = findE2bTemplate(await listed(c), name);
    return t ? c.json(answer(t)) : fail(c, 404, `template "${name}" not found`);
  };
  const unsupported = (operation: string, what: string) =>
    notImplemented(
      deps,
      operation,
      `${what} is not supported by this control plane: ${HOW_TEMPLATES_ARE_ADDED}`,
    );

  // Writes first: POST /templates/tags is not a rebuild of a template named "tags".
  const build = unsupported("template-build", "building templates");
  app.post("/templates", build);
  app.post("/v2/templates", build);
  app.post("/v3/templates", build);
  const tags = unsupported("template-tags", "template tags");
  app.post("/templates/tags", tags);
  app.delete("/templates/tags", tags);
  app.post("/templates/:id", build);
  app.post("/templates/:id/builds/:buildID", build);
  app.post("/v2/templates/:id/builds/:buildID", build);
  const status = unsupported("template-build-status", "template builds");
  app.get("/templates/:id/builds/:buildID/status", status);
  app.get("/templates/:id/builds/:buildID/logs", status);
  app.get("/templates/:id/files/:hash", unsupported("template-upload", "uploading template files"));
  const update = unsupported("template-update", "updating templates");
  app.patch("/templates/:id", update);
  app.patch("/v2/templates/:id", update);
  app.delete("/templates/:id", unsupported("template-delete", "deleting templates"));

  // Reads. One page: the list is the team's templates and pools, read from the watch cache.
  app.get("/templates", async (c) => c.json(await listed(c)));
  app.get("/v2/templates", async (c) => c.json(await listed(c)));
  app.get("/templates/aliases/:alias", (c) =>
    found(c, "alias", (t) => ({ templateID: t.templateID, public: t.public })),
  );
  // No tags: a create takes a template's name, never "name:tag".
  app.get("/templates/:id/tags", (c) => found(c, "id", () => []));
  app.get("/templates/:id", (c) => found(c, "id", e2bTemplateWithBuilds));
  return app;
}
