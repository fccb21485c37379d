import type { Context, Hono } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { listTargets } from "../functions/api/list-targets.ts";
import { EnvEditRefused, editEnv } from "../functions/envs/edit-env.ts";
import { readEnvOverview, readEnvTimeline } from "../functions/envs/read-env.ts";
import type { HostDeps } from "../functions/host-deps.ts";
import { refreshMember } from "../functions/runs/refresh-member.ts";
import type { Tenant } from "../lib/claims/api-keys.ts";
import { type EnvPageState, envMissingView, envPageView, envPath } from "../lib/console/env-pages.ts";
import type { Html } from "../lib/console/layout.ts";
import { type EnvEditRejection, rejection } from "../lib/env/env-edit-rejection.ts";
import { EDIT_OPS, editFromFields } from "../lib/env/env-edit-request.ts";

type Show = (
  c: Context,
  title: string,
  body: Html,
  status?: ContentfulStatusCode,
) => Response | Promise<Response>;
type Vars = { Variables: { tenant: Tenant } };

const ACTIONS = new Set<string>([...EDIT_OPS, "refresh-member"]);

/** DONE_COOKIE carries an edit's summary to the page its redirect shows, once (60 s at most). */
const DONE_COOKIE = "agentbox_console_done";

/** editorOf names who made an edit, in the Env's EnvEdited Event: the console and the credential's tenant. */
const editorOf = (t: Tenant) =>
  t.team === "*" ? "console (admin token)" : `console (${t.team}/${t.user}, admin key)`;

/**
 * consoleEnvRoutes adds the Env page to the console (issue #26, section 3): `GET /envs/:ns/:name`
 * shows the Env's members, groups and Event timeline to whoever may use the Env (listTargets'
 * rule; an admin: every Env); `POST /envs/:ns/:name/<edit>` (add-member, remove-member,
 * set-member, set-group, remove-group, refresh-member) changes it for an admin only (the admin
 * token, or an API key made with --admin): team keys have no namespace of their own to edit in
 * (tenants are team/user labels, not namespaces), so they read. An edit goes through the
 * apiserver (editEnv; admission checks it) and answers with a redirect to the page saying what
 * changed (in a one-time cookie), or the page with the refusal at its status (400, 403, 404, 409, 422).
 */
export function consoleEnvRoutes(app: Hono<Vars>, api: HostDeps, show: Show): void {
  const visible = async (tenant: Tenant, key: string) =>
    tenant.admin ||
    (await listTargets(api, tenant)).envs.some((e) => `${e.metadata?.namespace}/${e.metadata?.name}` === key);
  const render = async (
    c: Context<Vars>,
    namespace: string,
    name: string,
    state: Omit<EnvPageState, "canEdit" | "now">,
    status: ContentfulStatusCode = 200,
  ) => {
    const tenant = c.get("tenant");
    const key = `${namespace}/${name}`;
    const overview =
      api.clusterId && (await visible(tenant, key))
        ? await readEnvOverview(api, api.clusterId, namespace, name)
        : undefined;
    // An Env the viewer may not use is answered as one that is not there.
    if (!overview) return show(c, "Env", envMissingView(key), 404);
    const timeline = await readEnvTimeline(
      api,
      namespace,
      name,
      overview.members.map((m) => m.name),
    );
    const body = envPageView(overview, timeline, {
      ...state,
      canEdit: tenant.admin === true,
      now: api.now(),
    });
    return show(c, `Env ${key}`, body, status);
  };

  app.get("/envs/:namespace/:name", (c) => {
    // The last edit's summary, once: a cookie only this console sets (never the URL, where a
    // crafted link could put any "Done" line on the page).
    const done = getCookie(c, DONE_COOKIE)?.slice(0, 500);
    if (done !== undefined) deleteCookie(c, DONE_COOKIE, { path: "/ui" });
    return render(c, c.req.param("namespace"), c.req.param("name"), done ? { done } : {});
  });

  app.post("/envs/:namespace/:name/:action", async (c) => {
    const { namespace, name, action } = c.req.param();
    const tenant = c.get("tenant");
    const refuse = (r: EnvEditRejection) => render(c, namespace, name, { error: r }, r.status);
    if (!ACTIONS.has(action))
      return refuse(rejection(404, `no Env edit "${action}" (${[...ACTIONS].join(", ")})`));
    if (!tenant.admin)
      return refuse(
        rejection(403, "only an admin may change an Env: sign in with the admin token or an admin API key"),
      );
    if (!api.clusterId)
      return c.text("this host has no local cluster ID (AGENTBOX_CLUSTER_ID): it edits no Env", 500);
    const form = await c.req.parseBody();
    const fields = Object.fromEntries(
      Object.entries(form).filter((e): e is [string, string] => typeof e[1] === "string"),
    );
    let summary: string;
    try {
      if (action === "refresh-member") {
        const report = await refreshMember(api, namespace, name, fields.member ?? "");
        summary = `member "${report.member}": ${report.note}`;
      } else {
        const edit = editFromFields(action, fields);
        if (!edit.ok) return refuse(rejection(400, `the ${action} form is not valid`, edit.issues));
        summary = (await editEnv(api, api.clusterId, namespace, name, edit.value, editorOf(tenant))).summary;
      }
    } catch (e) {
      if (e instanceof EnvEditRefused) return refuse(e.rejection);
      const errName = e instanceof Error ? e.name : "";
      if (errName === "NotFound")
        return refuse(
          rejection(404, (e as Error).message, [{ path: "member", message: (e as Error).message }]),
        );
      if (errName === "StepRefused") return refuse(rejection(409, (e as Error).message));
      throw e;
    }
    setCookie(c, DONE_COOKIE, summary.slice(0, 500), {
      path: "/ui",
      httpOnly: true,
      secure: true,
      sameSite: "Strict",
      maxAge: 60,
    });
    return c.redirect(`${envPath(`${namespace}/${name}`)}#members`, 303);
  });
}
