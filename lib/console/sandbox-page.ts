// The console's page of one sandbox: who and where it is, its phase and times, its pauses and
// resumes, and its CPU and memory over its life.
import { html } from "hono/html";
import { PAUSED_PHASE } from "../claims/paused-view.ts";
import type { SandboxView } from "../claims/sandbox-view.ts";
import type { LifecycleEvent } from "../history/lifecycle-event.ts";
import type { SandboxRecord } from "../history/record.ts";
import type { UsageSample } from "../usage/sample.ts";
import { ago, bytes, type Html, phase } from "./layout.ts";
import { pausedActions } from "./pages.ts";
import { usageCharts } from "./usage-chart.ts";

/**
 * SandboxPage is what the page shows: the sandbox as the API shows it now (`live`: while a pod
 * runs it, or paused: phase "paused", no pod), else its history record ("down": the history
 * cannot say now); its pauses and resumes from the history, oldest first ("down": it cannot say
 * now); and its samples, oldest first ("none-kept": this host keeps no samples; "down": their
 * database cannot answer now).
 */
export interface SandboxPage {
  sandboxId: string;
  live?: SandboxView;
  record?: SandboxRecord | "down";
  events?: readonly LifecycleEvent[] | "down";
  samples: readonly UsageSample[] | "none-kept" | "down";
}

/** NO_USAGE_STORE is what the page says on a host that keeps no resource samples. */
export const NO_USAGE_STORE =
  "No chart here: this host keeps no resource samples of its sandboxes (it has no usage store).";
/** NO_USAGE_SAMPLES is what it says of a sandbox with no samples (yet). */
export const NO_USAGE_SAMPLES =
  "No resource samples of this sandbox yet: the control plane samples the CPU and memory of a sandbox while it runs, from its claim to its release.";
const USAGE_DOWN =
  "The resource samples cannot be read right now (their database is unavailable); try again in a moment.";

/** usageSection is the charts, or what stands in their place. */
function usageSection(p: SandboxPage, now: Date): Html {
  const body =
    p.samples === "down"
      ? html`<p class="warn">${USAGE_DOWN}</p>`
      : p.samples === "none-kept"
        ? html`<p class="muted">${NO_USAGE_STORE}</p>`
        : p.samples.length === 0
          ? html`<p class="muted">${NO_USAGE_SAMPLES}</p>`
          : usageCharts(
              p.sandboxId,
              p.samples,
              // While it runs the charts reach now; paused or ended, they end with its samples.
              p.live && p.live.phase !== PAUSED_PHASE
                ? now.getTime()
                : Date.parse(p.samples.at(-1)?.at ?? ""),
            );
  return html`<section id="usage"><h2>CPU and memory</h2>${body}</section>`;
}

/** row is one line of the details table, left out when it has no value. */
const row = (name: string, value: Html | string | undefined) =>
  value === undefined || value === "" ? "" : html`<tr><th>${name}</th><td>${value}</td></tr>`;

/** PAUSED_NOTE is what the page of a paused sandbox says of it. */
export const PAUSED_NOTE =
  "This sandbox is paused: it holds no pod, and its files are kept in a snapshot. Resume runs it again with the same id and its files; Kill ends it and deletes the snapshot.";
const EVENTS_DOWN =
  "Its pauses and resumes cannot be read right now (the history's database is unavailable); try again in a moment.";

/** pausedDetails are a paused sandbox's rows: when it was paused, until when it is kept, its size. */
function pausedDetails(s: SandboxView, now: Date): Html {
  return html`${row("paused", s.pausedAt && `${s.pausedAt} (${ago(s.pausedAt, now)})`)}${row("kept until", s.retainUntil)}${row("size", s.snapshotBytes === undefined ? undefined : bytes(s.snapshotBytes))}${row("lifetime left", s.lifetimeSeconds === undefined ? undefined : `${s.lifetimeSeconds} s`)}${row("detail", s.detail && `${s.detail.reason}: ${s.detail.message ?? ""}`)}`;
}

/**
 * eventsSection lists the sandbox's pauses and resumes, oldest first (none: left out): when, which
 * (the n-th pause or resume), the pod it left or resumed on, and a pause's size.
 */
function eventsSection(events: SandboxPage["events"]): Html | "" {
  if (events === undefined || (events !== "down" && events.length === 0)) return "";
  const body =
    events === "down"
      ? html`<p class="warn">${EVENTS_DOWN}</p>`
      : html`<table>
          <tr><th>at</th><th>event</th><th>pod</th><th>size</th></tr>
          ${events.map(
            (e) => html`<tr data-event="${e.kind}-${e.n}">
              <td>${e.at}</td><td>${e.kind} <span class="muted">#${e.n}</span></td><td>${e.podName}</td>
              <td>${e.bytes === undefined ? "" : bytes(e.bytes)}</td>
            </tr>`,
          )}
        </table>`;
  return html`<section id="lifecycle"><h2>Pauses and resumes</h2>${body}</section>`;
}

/**
 * sandboxPageView is the page: the sandbox's details (a paused one: that it is paused, its
 * snapshot and its Resume and Kill buttons), its pauses and resumes, then its CPU and memory charts.
 */
export function sandboxPageView(p: SandboxPage, now: Date): Html {
  const s = p.live;
  const r = p.record === "down" ? undefined : p.record;
  const paused = s?.phase === PAUSED_PHASE;
  const details = s
    ? html`${row("phase", phase(s.phase))}${row("owner", `${s.team ?? ""}/${s.user ?? ""}`)}${row("pool", `${s.namespace}/${s.pool}`)}${row("pod", s.pod)}${row("claimed", s.claimedAt && `${s.claimedAt} (${ago(s.claimedAt, now)})`)}${row("running since", s.startedAt)}${row("ends", s.endAt)}${row("failure", s.failure && `${s.failure.reason} ${s.failure.message ?? ""}`)}${paused ? pausedDetails(s, now) : ""}`
    : r
      ? html`${row("phase", phase("ended"))}${row("owner", `${r.team ?? ""}/${r.user ?? ""}`)}${row("pool", `${r.namespace}/${r.poolName}`)}${row("claimed", r.claimedAt)}${row("started", r.startedAt)}${row("ended", `${r.terminatedAt} (${r.stopReason})`)}${row("failure", r.failureReason && `${r.failureReason} ${r.failureMessage ?? ""}`)}`
      : html`<tr><td class="warn">The history cannot be read right now (its database is unavailable); try again in a moment.</td></tr>`;
  return html`<section id="sandbox" data-sandbox="${p.sandboxId}">
      <h2>Sandbox <code>${p.sandboxId}</code></h2>
      ${paused ? html`<p class="paused-note">${PAUSED_NOTE}</p>` : ""}
      <table>${details}</table>
      ${paused ? html`<p>${pausedActions(p.sandboxId)}</p>` : ""}
    </section>
    ${eventsSection(p.events)}
    ${p.record === "down" ? "" : usageSection(p, now)}`;
}

/** sandboxNotResumedView says why the console's Resume did not resume the sandbox. */
export function sandboxNotResumedView(id: string, message: string): Html {
  return html`<section id="sandbox" data-sandbox="${id}"><h2>Sandbox <code>${id}</code> was not resumed</h2>
    <p class="warn">${message}</p><p><a href="/ui/sandboxes/${id}">The sandbox</a> · <a href="/ui#sandboxes">All sandboxes</a></p></section>`;
}

/** sandboxMissingView is the page of a sandbox the tenant has none of (another tenant's included). */
export function sandboxMissingView(id: string): Html {
  return html`<section id="sandbox"><h2>Sandbox</h2>
    <p class="warn">There is no sandbox ${id} that you may see.</p><p><a href="/ui#sandboxes">All sandboxes</a></p></section>`;
}
