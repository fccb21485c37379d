import { html } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";

/** Html is what the console's views return: escaped HTML, as hono/html builds it. */
export type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

const STYLE = `
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1c2430;background:#f6f7f9}
header{background:#1c2430;color:#fff;padding:10px 20px;display:flex;gap:20px;align-items:center}
header a{color:#cfe0ff;text-decoration:none}header .who{margin-left:auto;opacity:.8}
main{padding:16px 20px;max-width:1400px}
section{background:#fff;border:1px solid #dde2e8;border-radius:6px;padding:12px 16px;margin:0 0 16px}
h1{font-size:18px;margin:0}h2{font-size:16px;margin:0 0 8px}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #eef0f3;vertical-align:top}
th{font-weight:600;color:#566}td.num{text-align:right;font-variant-numeric:tabular-nums}
.phase{display:inline-block;padding:0 6px;border-radius:8px;background:#e8edf3;font-size:12px}
.phase.running,.phase.Ready,.phase.Active{background:#d8f3dc}.phase.starting,.phase.ScalingUp{background:#fff1c7}
.phase.stopping,.phase.ScalingDown{background:#e4e1f7}.phase.paused{background:#dcebfa}.phase.failed,.phase.Degraded,.phase.Saturated{background:#ffd9d6}
.warn{color:#a4262c;font-size:12px}.muted{color:#778;font-size:12px}
form.inline{display:inline}button{cursor:pointer}
.docs{border-left:3px solid #dde2e8;padding-left:12px}
`;

/** page is a whole console page: the header with the signed-in tenant, and the body. */
export function page(title: string, who: string | undefined, body: Html): Html {
  return html`<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>${title} · agentbox</title>
    <style>
      ${STYLE}
    </style>
  </head>
  <body>
    <header>
      <h1>agentbox</h1>
      ${
        who
          ? html`<a href="/ui">Overview</a><a href="/ui/history">History</a><a href="/ui/templates">Templates</a>
            <span class="who">${who}</span>
            <form class="inline" method="post" action="/ui/logout"><button>Sign out</button></form>`
          : ""
      }
    </header>
    <main>${body}</main>
  </body>
</html>`;
}

/** phase is a phase or state as a coloured badge. */
export function phase(value: string | undefined): Html {
  return html`<span class="phase ${value ?? ""}">${value ?? "–"}</span>`;
}

/** ago says how long before `now` an RFC 3339 time was, in the largest whole unit. */
export function ago(time: string | undefined, now: Date): string {
  const ms = now.getTime() - Date.parse(time ?? "");
  if (!Number.isFinite(ms)) return "–";
  const s = Math.max(0, Math.round(ms / 1000));
  return s < 120 ? `${s}s ago` : s < 7200 ? `${Math.round(s / 60)}m ago` : `${Math.round(s / 3600)}h ago`;
}

const KiB = 1024;
const MiB = 1024 * KiB;

/** bytes writes a size: bytes below 1 KiB, KiB below 1 MiB, MiB below 10 GiB, else GiB, to a tenth. */
export function bytes(v: number): string {
  if (v < KiB) return `${v} B`;
  if (v < MiB) return `${(v / KiB).toFixed(1)} KiB`;
  return v >= 10 * 1024 * MiB ? `${(v / (1024 * MiB)).toFixed(1)} GiB` : `${(v / MiB).toFixed(1)} MiB`;
}

/** SandboxAction is what a sandbox's buttons post: release (a kill of a paused one), resume. */
export type SandboxAction = "release" | "resume";

/**
 * sandboxAction is a button posting one of the console's sandbox forms to
 * /ui/sandboxes/<id>/<action>: a plain form of this origin, which the console's Origin check
 * and its SameSite=Strict session cookie guard as they guard every console form.
 */
export function sandboxAction(id: string, action: SandboxAction, label: string): Html {
  return html`<form class="inline" method="post" action="/ui/sandboxes/${id}/${action}"><button>${label}</button></form>`;
}
