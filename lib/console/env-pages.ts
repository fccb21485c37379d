// The console's Env page (issue #26, section 3): an Env's members with their state, its
// autoscaling groups, the forms that edit them (admins only), and the timeline of the Events about
// the Env and its pools. Server-rendered like the rest of the console: forms post, no script.
import { html } from "hono/html";
import type { EnvEditRejection } from "../env/env-edit-rejection.ts";
import { CLEAR } from "../env/env-edit-request.ts";
import type { EnvOverview, GroupRow, MemberRow } from "../env/env-overview.ts";
import type { TimelineEntry } from "../env/env-timeline.ts";
import { ago, type Html, phase } from "./layout.ts";

/** EnvPageState is what the page says besides the Env: whether the viewer may edit, and an outcome. */
export interface EnvPageState {
  canEdit: boolean;
  /** done is the summary of the edit just made. */
  done?: string | undefined;
  /** error is why the edit just tried was not made. */
  error?: EnvEditRejection | undefined;
  now: Date;
}

/** envPath is the Env page's path; `/<action>` appended, where its forms post. */
export const envPath = (key: string) => `/ui/envs/${key}`;

const num = (n: number | undefined) => (n === undefined ? "–" : String(n));

function outcome(state: EnvPageState): Html {
  const e = state.error;
  if (e)
    return html`<section id="edit-error" role="alert" style="border-color:#a4262c">
      <h2 class="warn">Not changed (${e.status} ${e.code})</h2>
      <p class="warn">${e.message}</p>
      ${
        e.fields.length > 0
          ? html`<ul>${e.fields.map((f) => html`<li><code>${f.path}</code>: ${f.message}</li>`)}</ul>`
          : ""
      }
    </section>`;
  if (state.done) return html`<section id="edit-done" role="status"><p>Done: ${state.done}</p></section>`;
  return html``;
}

function memberRow(key: string, m: MemberRow, canEdit: boolean): Html {
  const c = m.config;
  const shape = c.instanceType ? `${c.instanceType} ×${c.multiplier ?? "?"}` : "template's resources";
  return html`<tr data-member="${m.name}">
    <td>${m.name}</td>
    <td>${m.template}</td>
    <td>${m.pool ?? html`<span class="muted">none yet</span>`}</td>
    <td>${phase(m.state)}</td>
    <td class="num" data-field="replicas">${m.replicas}</td>
    <td class="num">${m.idle}</td>
    <td class="num">${m.running}</td>
    <td data-field="bounds">${num(c.minReplicas)}..${num(c.maxReplicas)}</td>
    <td>${m.scalingGroup || html`<span class="muted">none</span>`}<div class="muted">${shape}</div></td>
    <td><span class="muted">${m.revision}</span>${m.behind ? html`<div class="warn" data-field="behind">behind: ${m.behind}</div>` : ""}</td>
    <td>${
      canEdit
        ? html`<form class="inline" method="post" action="${envPath(key)}/refresh-member"><input type="hidden" name="member" value="${m.name}" /><button>Refresh</button></form>
          <form class="inline" method="post" action="${envPath(key)}/remove-member"><input type="hidden" name="member" value="${m.name}" /><button>Remove</button></form>`
        : ""
    }</td>
  </tr>`;
}

function groupRow(g: GroupRow): Html {
  const policy = (p: Record<string, unknown>) =>
    Object.entries(p)
      .map(([k, v]) => `${k} ${String(v)}`)
      .join(", ");
  return html`<tr data-group="${g.name}">
    <td>${g.name}</td>
    <td>${g.enabled ? "enabled" : "disabled"}</td>
    <td data-field="bounds">${num(g.minReplicas)}..${num(g.maxReplicas)}</td>
    <td class="muted">up: ${policy(g.scaleUpPolicy)}<br />down: ${policy(g.scaleDownPolicy)}</td>
    <td>${g.members.join(", ") || html`<span class="muted">none</span>`}</td>
    <td class="muted">desired ${g.totals.desired}, idle ${g.totals.idle}, running ${g.totals.running}</td>
  </tr>`;
}

const field = (name: string, label: string, size = 6) =>
  html`<label>${label} <input name="${name}" size="${size}" /></label> `;

/** memberForms are the add-member and set-member forms. */
function memberForms(o: EnvOverview): Html {
  const key = o.key;
  const configFields = html`${field("minReplicas", "min")}${field("maxReplicas", "max")}${field("instanceType", "instance type", 10)}${field("multiplier", "×")}${field("scalingGroup", "group", 10)}${field("priority", "priority", 4)}`;
  return html`<form id="add-member" method="post" action="${envPath(key)}/add-member">
      <strong>Add member</strong> ${field("member", "name", 16)}${field("replicas", "replicas")}${configFields}
      <button>Add</button>
    </form>
    <form id="set-member" method="post" action="${envPath(key)}/set-member">
      <strong>Change member</strong>
      <label>member <select name="member">${o.members.map((m) => html`<option>${m.name}</option>`)}</select></label>
      ${field("replicas", "replicas")}${configFields}
      <button>Save</button>
    </form>`;
}

/** groupForm is the set-group form (a group not there yet is added) and remove-group. */
function groupForm(o: EnvOverview): Html {
  const key = o.key;
  return html`<form id="set-group" method="post" action="${envPath(key)}/set-group">
      <strong>Set group</strong> ${field("group", "name", 10)}
      <label>autoscaling <select name="enabled"><option value="">as is</option><option value="true">enabled</option><option value="false">disabled</option></select></label>
      ${field("minReplicas", "min")}${field("maxReplicas", "max")}
      <label>mode <select name="mode"><option value="">as is</option><option>Conservative</option><option>Default</option><option>Aggressive</option></select></label>
      ${field("cooldownSeconds", "cooldown s")}${field("idleThresholdSeconds", "idle threshold s")}${field("idleZeroQuietWindowSeconds", "quiet window s")}${field("saturationCooldownSeconds", "saturation cooldown s")}
      ${field("idleTimeoutSeconds", "idle timeout s")}${field("stabilizationSeconds", "stabilization s")}${field("protectionWindowSeconds", "protection window s")}
      <button>Save</button>
    </form>
    <form id="remove-group" method="post" action="${envPath(key)}/remove-group">
      <strong>Remove group</strong>
      <select name="group">${o.groups.map((g) => html`<option>${g.name}</option>`)}</select>
      <button>Remove</button>
    </form>`;
}

/** timelineView lists the Events about the Env and its pools, newest first. */
export function timelineView(entries: readonly TimelineEntry[], now: Date): Html {
  return html`<section id="timeline">
    <h2>Timeline <span class="muted">(Events of the Env and its pools, newest first; the apiserver keeps them about an hour)</span></h2>
    ${
      entries.length === 0
        ? html`<p class="muted">no Events</p>`
        : html`<table>
      <tr><th>time</th><th>reason</th><th>object</th><th>message</th></tr>
      ${entries.map(
        (e) => html`<tr class="event" data-reason="${e.reason}">
        <td title="${e.time}">${ago(e.time, now)}<div class="muted">${e.time}</div></td>
        <td>${e.type === "Warning" ? html`<span class="warn">${e.reason}</span>` : e.reason}${e.count > 1 ? html` <span class="muted">×${e.count}</span>` : ""}</td>
        <td>${e.object}</td>
        <td>${e.message}</td>
      </tr>`,
      )}
    </table>`
    }
  </section>`;
}

/**
 * envPageView is the Env page: the outcome of an edit just tried, the members, the groups, the
 * forms (when the viewer may edit: an admin) and the timeline.
 */
export function envPageView(o: EnvOverview, timeline: readonly TimelineEntry[], state: EnvPageState): Html {
  const hint = html`<p class="muted">Empty fields stay as they are; <code>${CLEAR}</code> removes a value. Writes go through the apiserver, so admission checks them as it checks kubectl.</p>`;
  return html`${outcome(state)}
  <section id="env" data-env="${o.key}">
    <h2>Env ${o.key}</h2>
    <p>template <code>${o.templateRef}</code> · cluster segment <code>${o.clusterId}</code>${
      o.otherSegments.length > 0
        ? html` <span class="muted">(other segments, not edited here: ${o.otherSegments.map((s) => `${s.clusterID}: ${s.members} members`).join("; ")})</span>`
        : ""
    }</p>
    <div>${o.conditions.map(
      (c) =>
        html`<div>${c.type}=${c.status} <span class="muted">${c.reason}${c.message ? `: ${c.message}` : ""}</span></div>`,
    )}</div>
  </section>
  <section id="members">
    <h2>Members</h2>
    <table>
      <tr><th>member</th><th>template</th><th>pool</th><th>state</th><th>replicas</th><th>idle</th><th>running</th><th>min..max</th><th>group</th><th>revision</th><th></th></tr>
      ${o.members.map((m) => memberRow(o.key, m, state.canEdit))}
    </table>
    ${state.canEdit ? html`${memberForms(o)}${hint}` : html`<p class="muted">Only an admin may change an Env.</p>`}
  </section>
  <section id="groups">
    <h2>Autoscaling groups</h2>
    ${
      o.groups.length === 0
        ? html`<p class="muted">none: replicas are set by hand</p>`
        : html`<table>
      <tr><th>group</th><th>autoscaling</th><th>min..max</th><th>policies</th><th>members</th><th>totals</th></tr>
      ${o.groups.map(groupRow)}
    </table>`
    }
    ${state.canEdit ? groupForm(o) : ""}
  </section>
  ${timelineView(timeline, state.now)}`;
}

/** envMissingView answers an Env that is not there, or that the viewer may not use. */
export function envMissingView(key: string): Html {
  return html`<section id="edit-error" role="alert"><p class="warn">No SandboxEnv "${key}" for you here.</p><p><a href="/ui#envs">All Envs</a></p></section>`;
}
