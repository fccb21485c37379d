// The console's page of one sandbox: who and where it is, its phase and times, and its CPU and
// memory over its life.
import { html } from "hono/html";
import type { SandboxView } from "../claims/sandbox-view.ts";
import type { SandboxRecord } from "../history/record.ts";
import type { UsageSample } from "../usage/sample.ts";
import { ago, type Html, phase } from "./layout.ts";
import { usageCharts } from "./usage-chart.ts";

/**
 * SandboxPage is what the page shows: the sandbox while a pod runs it (`live`), else its history
 * record ("down": the history cannot say now), and its samples, oldest first ("none-kept": this
 * host keeps no samples; "down": their database cannot answer now).
 */
export interface SandboxPage {
  sandboxId: string;
  live?: SandboxView;
  record?: SandboxRecord | "down";
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
              // While it runs the charts reach now; once it ended, they end with its samples.
              p.live ? now.getTime() : Date.parse(p.samples.at(-1)?.at ?? ""),
            );
  return html`<section id="usage"><h2>CPU and memory</h2>${body}</section>`;
}

/** row is one line of the details table, left out when it has no value. */
const row = (name: string, value: Html | string | undefined) =>
  value === undefined || value === "" ? "" : html`<tr><th>${name}</th><td>${value}</td></tr>`;

/** sandboxPageView is the page: the sandbox's details, then its CPU and memory charts. */
export function sandboxPageView(p: SandboxPage, now: Date): Html {
  const s = p.live;
  const r = p.record === "down" ? undefined : p.record;
  const details = s
    ? html`${row("phase", phase(s.phase))}${row("owner", `${s.team ?? ""}/${s.user ?? ""}`)}${row("pool", `${s.namespace}/${s.pool}`)}${row("pod", s.pod)}${row("claimed", s.claimedAt && `${s.claimedAt} (${ago(s.claimedAt, now)})`)}${row("running since", s.startedAt)}${row("ends", s.endAt)}${row("failure", s.failure && `${s.failure.reason} ${s.failure.message ?? ""}`)}`
    : r
      ? html`${row("phase", phase("ended"))}${row("owner", `${r.team ?? ""}/${r.user ?? ""}`)}${row("pool", `${r.namespace}/${r.poolName}`)}${row("claimed", r.claimedAt)}${row("started", r.startedAt)}${row("ended", `${r.terminatedAt} (${r.stopReason})`)}${row("failure", r.failureReason && `${r.failureReason} ${r.failureMessage ?? ""}`)}`
      : html`<tr><td class="warn">The history cannot be read right now (its database is unavailable); try again in a moment.</td></tr>`;
  return html`<section id="sandbox" data-sandbox="${p.sandboxId}">
      <h2>Sandbox <code>${p.sandboxId}</code></h2>
      <table>${details}</table>
    </section>
    ${p.record === "down" ? "" : usageSection(p, now)}`;
}

/** sandboxMissingView is the page of a sandbox the tenant has none of (another tenant's included). */
export function sandboxMissingView(id: string): Html {
  return html`<section id="sandbox"><h2>Sandbox</h2>
    <p class="warn">There is no sandbox ${id} that you may see.</p><p><a href="/ui#sandboxes">All sandboxes</a></p></section>`;
}
