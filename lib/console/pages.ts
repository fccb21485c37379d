import { html, raw } from "hono/html";
import { PAUSED_PHASE } from "../claims/paused-view.ts";
import type { SandboxView } from "../claims/sandbox-view.ts";
import { TEMPLATE_DOCS_ANNOTATION } from "../crd/keys.ts";
import type { SandboxEnv } from "../crd/sandbox-env.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import type { SandboxTemplate } from "../crd/sandbox-template.ts";
import type { HistoryPage, HistoryQuery } from "../history/store.ts";
import type { PodDiagnosticEvent } from "../lifecycle/diagnostics.ts";
import { ago, bytes, type Html, phase, sandboxAction } from "./layout.ts";
import { renderMarkdown } from "./markdown.ts";
import { NO_POOL_SAMPLES, type PoolCharts } from "./pool-chart.ts";

/** loginView asks for an API key (its tenant's view) or the admin token (everything). */
export function loginView(error?: string): Html {
  return html`<section>
    <h2>Sign in</h2>
    <p class="muted">An API key shows its own sandboxes and the pools it may use; the admin token shows everything.</p>
    ${error ? html`<p class="warn">${error}</p>` : ""}
    <form method="post" action="/ui/login">
      <input type="password" name="credential" placeholder="API key or admin token" size="60" autocomplete="off" autofocus />
      <button type="submit">Sign in</button>
    </form>
  </section>`;
}

/** envsView lists Envs with their members (state and counts) and scaling groups. */
export function envsView(envs: readonly SandboxEnv[]): Html {
  if (envs.length === 0) return html`<section id="envs"><h2>Envs</h2><p class="muted">none</p></section>`;
  const row = (env: SandboxEnv) => {
    const s = env.status;
    const members = (s?.clusters ?? []).flatMap((c) => c.observedMembers ?? []);
    const groups = s?.scalingGroups ?? [];
    const saturated = members.filter((m) => m.state === "Saturated").length;
    return html`<tr>
      <td><a href="/ui/envs/${env.metadata?.namespace}/${env.metadata?.name}">${env.metadata?.namespace}/${env.metadata?.name}</a></td>
      <td class="num">${s?.desiredReplicas ?? 0}</td>
      <td class="num">${s?.idleReplicas ?? 0}</td>
      <td class="num">${s?.runningReplicas ?? 0}</td>
      <td>${members.map(
        (m) =>
          html`<div>${m.name} ${phase(m.state)} <span class="muted">desired ${m.desiredReplicas ?? 0}, idle ${m.idleCount ?? 0}, running ${m.runningCount ?? 0}</span></div>`,
      )}</td>
      <td>${groups.map(
        (g) =>
          html`<div>${g.name}: <span class="muted">desired ${g.totalDesired ?? 0}, idle ${g.totalIdle ?? 0}, running ${g.totalRunning ?? 0}</span></div>`,
      )}</td>
      <td>${saturated > 0 ? html`<span class="warn">${saturated} saturated</span>` : "–"}</td>
    </tr>`;
  };
  return html`<section id="envs">
    <h2>Envs</h2>
    <table>
      <tr><th>Env</th><th>desired</th><th>idle</th><th>running</th><th>members</th><th>scaling groups</th><th>saturation</th></tr>
      ${envs.map(row)}
    </table>
  </section>`;
}

/**
 * poolsView lists pools: phase, conditions and pods per phase, and each pool's chart of its last
 * hour (`charts`; a host that keeps no samples passes none and the view says so).
 */
export function poolsView(pools: readonly SandboxPool[], charts?: PoolCharts): Html {
  const row = (p: SandboxPool) => {
    const s = p.status;
    const conditions = (s?.conditions ?? []).filter((c) => c.status === "True" || c.type === "Available");
    return html`<tr data-pool="${p.metadata?.namespace}/${p.metadata?.name}">
      <td>${p.metadata?.namespace}/${p.metadata?.name}</td>
      <td>${phase(s?.phase)}</td>
      <td class="num">${p.spec.replicas ?? 0}</td>
      <td class="num">${s?.idleReplicas ?? 0}</td>
      <td class="num">${s?.startingReplicas ?? 0}</td>
      <td class="num">${s?.runningReplicas ?? 0}</td>
      <td class="num">${s?.stoppingReplicas ?? 0}</td>
      <td class="num">${s?.failedReplicas ?? 0}</td>
      <td>${conditions.map(
        (c) => html`<div>${c.type}=${c.status} <span class="muted">${c.reason ?? ""}</span></div>`,
      )}</td>
      ${charts ? html`<td>${charts(`${p.metadata?.namespace}/${p.metadata?.name}`)}</td>` : ""}
    </tr>`;
  };
  return html`<section id="pools">
    <h2>Pools</h2>
    <table>
      <tr><th>pool</th><th>phase</th><th>desired</th><th>idle</th><th>starting</th><th>running</th><th>stopping</th><th>failed</th><th>conditions</th>${charts ? html`<th>last hour</th>` : ""}</tr>
      ${pools.map(row)}
    </table>
    ${charts ? "" : html`<p class="muted">${NO_POOL_SAMPLES}</p>`}
  </section>`;
}

/**
 * pausedTimings is when a paused sandbox was paused and until when it is kept: past that, unresumed,
 * it ends with its snapshot.
 */
export function pausedTimings(s: Pick<SandboxView, "pausedAt" | "retainUntil">, now: Date): Html {
  return html`paused ${ago(s.pausedAt, now)}${s.retainUntil ? html`<div class="muted kept">kept until ${s.retainUntil}</div>` : ""}`;
}

/**
 * pausedActions are a paused sandbox's buttons: Resume runs it again (same id, its files), Kill
 * ends it and deletes its snapshot, as a release ends a running one (the same form and route).
 */
export function pausedActions(id: string): Html {
  return html`${sandboxAction(id, "resume", "Resume")} ${sandboxAction(id, "release", "Kill")}`;
}

/**
 * sandboxesView lists sandboxes: phase, timings, what explains a starting or failed one (its
 * detail and the Warning events since its claim, `warnings` by sandbox id), and a release button
 * for those that can be released. A paused one shows when it was paused, until when it is kept
 * and its snapshot's size, with a Resume and a Kill button (the kill deletes its snapshot).
 */
export function sandboxesView(
  sandboxes: readonly SandboxView[],
  warnings: ReadonlyMap<string, readonly Pick<PodDiagnosticEvent, "reason" | "message">[]>,
  now: Date,
): Html {
  const row = (s: SandboxView) => {
    const events = warnings.get(s.sandboxId) ?? [];
    const releasable = s.phase === "running" || s.phase === "starting";
    const paused = s.phase === PAUSED_PHASE;
    return html`<tr data-sandbox="${s.sandboxId}">
      <td><a href="/ui/sandboxes/${s.sandboxId}"><code>${s.sandboxId}</code></a><div class="muted">${s.team ?? ""}/${s.user ?? ""}</div></td>
      <td>${s.namespace}/${s.pool}</td>
      <td>${phase(s.phase)}</td>
      <td>${paused ? pausedTimings(s, now) : html`claimed ${ago(s.claimedAt, now)}`}${s.startedAt ? html`<div class="muted">running since ${ago(s.startedAt, now)}</div>` : ""}${s.endAt ? html`<div class="muted">ends ${s.endAt}</div>` : ""}</td>
      <td>${s.snapshotBytes !== undefined ? html`<div class="size">snapshot ${bytes(s.snapshotBytes)}</div>` : ""}${s.detail ? html`<div>${s.detail.reason}: ${s.detail.message ?? ""}</div>` : ""}${s.failure ? html`<div class="warn">${s.failure.reason} ${s.failure.message ?? ""}</div>` : ""}${events.map(
        (e) => html`<div class="warn">${e.reason}: ${e.message}</div>`,
      )}</td>
      <td>${releasable ? sandboxAction(s.sandboxId, "release", "Release") : ""}${paused ? pausedActions(s.sandboxId) : ""}</td>
    </tr>`;
  };
  return html`<section id="sandboxes">
    <h2>Sandboxes</h2>
    ${
      sandboxes.length === 0
        ? html`<p class="muted">none</p>`
        : html`<table>
          <tr><th>sandbox</th><th>pool</th><th>phase</th><th>timings</th><th>diagnostics</th><th></th></tr>
          ${sandboxes.map(row)}
        </table>`
    }
  </section>`;
}

/** historyView lists terminal records with the filter form (pool, from, to), newest first. */
export function historyView(page: HistoryPage, q: HistoryQuery): Html {
  const next = page.next
    ? `/ui/history?${new URLSearchParams({ ...(q as Record<string, string>), after: page.next })}`
    : undefined;
  return html`<section id="history">
    <h2>History</h2>
    <form method="get" action="/ui/history">
      <input name="namespace" placeholder="namespace" value="${q.namespace ?? ""}" />
      <input name="pool" placeholder="pool" value="${q.pool ?? ""}" />
      <input name="from" placeholder="from (RFC 3339)" value="${q.from ?? ""}" />
      <input name="to" placeholder="to (RFC 3339)" value="${q.to ?? ""}" />
      <button>Filter</button>
    </form>
    <table>
      <tr><th>sandbox</th><th>pool</th><th>stop</th><th>failure</th><th>claimed</th><th>started</th><th>ended</th></tr>
      ${page.records.map(
        (r) => html`<tr data-record="${r.sandboxId}">
          <td><a href="/ui/sandboxes/${r.sandboxId}"><code>${r.sandboxId}</code></a><div class="muted">${r.team ?? ""}/${r.user ?? ""}</div></td>
          <td>${r.namespace}/${r.poolName}</td>
          <td>${r.stopReason}</td>
          <td>${r.failureReason ?? ""}${r.failureMessage ? html`<div class="muted">${r.failureMessage}</div>` : ""}</td>
          <td>${r.claimedAt ?? ""}</td>
          <td>${r.startedAt ?? ""}</td>
          <td>${r.terminatedAt}</td>
        </tr>`,
      )}
    </table>
    ${next ? html`<p><a href="${next}">Older</a></p>` : ""}
  </section>`;
}

/** templatesView lists the templates with their docs (the docs annotation, rendered Markdown). */
export function templatesView(templates: readonly SandboxTemplate[]): Html {
  return html`<section id="templates">
    <h2>Templates</h2>
    ${templates.map((t) => {
      const docs = t.metadata?.annotations?.[TEMPLATE_DOCS_ANNOTATION];
      return html`<article data-template="${t.metadata?.name}">
        <h3>${t.metadata?.name}</h3>
        ${docs ? html`<div class="docs">${raw(renderMarkdown(docs))}</div>` : html`<p class="muted">no docs</p>`}
      </article>`;
    })}
  </section>`;
}
