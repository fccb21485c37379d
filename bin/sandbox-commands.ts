// The sandbox commands of the CLI: get pools|envs|templates|sandboxes, create, delete, pause,
// resume, history.
// They speak to a host's /v1 API with an API key, as any client would, so they see what that key
// may see.
import { parseArgs } from "node:util";
import { httpsRequest } from "../infra/cluster/http.ts";
import { readState } from "../infra/cluster/state.ts";
import type { SandboxView } from "../lib/claims/sandbox-view.ts";
import type { EnvSummary, PoolSummary } from "../lib/claims/target-summaries.ts";
import type { TemplateSummary } from "../lib/claims/template-summaries.ts";
import { age, apiErrorText, table } from "../lib/cli/table.ts";
import type { LifecycleEvent } from "../lib/history/lifecycle-event.ts";
import type { SandboxRecord } from "../lib/history/record.ts";

export const SANDBOX_COMMANDS = new Set(["get", "create", "delete", "pause", "resume", "history"]);

export const SANDBOX_USAGE = `       agentbox get pools|envs|templates|sandboxes [-o json] [CONNECTION]
       agentbox create --pool NS/NAME | --env NS/NAME | --template NAME [--wait] [--wait-timeout S] [--timeout S] [-o json] [CONNECTION]
       agentbox delete <SANDBOX-ID> [CONNECTION]
       agentbox pause <SANDBOX-ID> [-o json] [CONNECTION]          (files kept, pod back to its pool)
       agentbox resume <SANDBOX-ID> [--timeout S] [-o json] [CONNECTION]
       agentbox history [--namespace NS] [--pool NAME] [--limit N] [-o json] [CONNECTION]
       agentbox history <SANDBOX-ID> [-o json] [CONNECTION]       (its record and its pauses and resumes)

CONNECTION: --key KEY (else $AGENTBOX_KEY), and --cluster NAME (a local cluster's host and CA) or
--url URL (else $AGENTBOX_URL) with --ca FILE (else $AGENTBOX_CA; default: the system's CAs).`;

type Api = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: string }>;

/** connect resolves where the API is and with which key; an error says what is missing. */
function connect(v: { key?: string; url?: string; ca?: string; cluster?: string }): Api | string {
  const key = v.key ?? process.env.AGENTBOX_KEY;
  if (!key) return "error: no API key: pass --key or set AGENTBOX_KEY (npm run agentbox -- api-key create)";
  const local = v.cluster ? readState(v.cluster) : undefined;
  if (v.cluster && !local) return `error: no local cluster "${v.cluster}" is running`;
  const url =
    v.url ?? process.env.AGENTBOX_URL ?? (local ? `https://127.0.0.1:${local.hostPort}` : undefined);
  if (!url) return "error: where is the API? pass --url, --cluster NAME or set AGENTBOX_URL";
  const caFile = v.ca ?? process.env.AGENTBOX_CA ?? local?.caCert;
  return (method, path, body) =>
    httpsRequest(`${url.replace(/\/$/, "")}/v1${path}`, {
      method,
      headers: { "x-api-key": key, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      ...(caFile ? { caFile } : {}),
      timeoutMs: 120_000,
    });
}

/**
 * progress shows a spinner with the seconds waited on stderr while `work` runs, on a terminal
 * only (a pipe or a log gets no control characters), and clears it when done.
 */
async function progress<T>(what: string, work: Promise<T>): Promise<T> {
  if (!process.stderr.isTTY) return work;
  const frames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
  const t0 = Date.now();
  let i = 0;
  const timer = setInterval(() => {
    process.stderr.write(
      `\r${frames[i++ % frames.length]} ${what} ${((Date.now() - t0) / 1000).toFixed(0)}s`,
    );
  }, 100);
  try {
    return await work;
  } finally {
    clearInterval(timer);
    process.stderr.write("\r\x1b[K");
  }
}

const sandboxRows = (list: readonly SandboxView[], now: Date) =>
  table(
    ["sandbox", "pool", "phase", "claimed", "started", "pod ip"],
    list.map((s) => [
      s.sandboxId,
      `${s.namespace}/${s.pool}`,
      s.phase,
      age(s.claimedAt, now),
      age(s.startedAt, now),
      s.podIP ?? "-",
    ]),
  );

/** sandboxCommand runs one sandbox command and returns the exit code (2: bad usage, 1: refused). */
export async function sandboxCommand(argv: string[]): Promise<number> {
  const { values: v, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      key: { type: "string" },
      url: { type: "string" },
      ca: { type: "string" },
      cluster: { type: "string" },
      output: { type: "string", short: "o", default: "table" },
      pool: { type: "string" },
      env: { type: "string" },
      template: { type: "string" },
      namespace: { type: "string" },
      wait: { type: "boolean", default: false },
      "wait-timeout": { type: "string" },
      timeout: { type: "string" },
      limit: { type: "string" },
    },
  });
  const [command, what] = positionals;
  if (v.output !== "table" && v.output !== "json") {
    console.error(`error: -o ${v.output}: choose table or json`);
    return 2;
  }
  const api = connect(v);
  if (typeof api === "string") {
    console.error(api);
    return 2;
  }
  const json = v.output === "json";
  const now = new Date();
  const print = (value: unknown, asTable: () => string) =>
    console.log(json ? JSON.stringify(value, null, 2) : asTable());
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await api(method, path, body);
    if (res.status >= 300) {
      console.error(apiErrorText(res.status, res.body));
      return undefined;
    }
    return res.body ? (JSON.parse(res.body) as unknown) : {};
  };
  if (
    command === "get" &&
    (what === "pools" || what === "envs" || what === "templates" || what === "sandboxes")
  ) {
    const got = (await call("GET", `/${what}`)) as Record<string, unknown[]> | undefined;
    if (!got) return 1;
    if (what === "pools")
      print(got.pools, () =>
        table(
          ["pool", "phase", "desired", "idle", "starting", "running", "stopping", "failed", "template"],
          (got.pools as PoolSummary[]).map((p) => [
            p.pool,
            p.phase,
            ...[p.desired, p.idle, p.starting, p.running, p.stopping, p.failed].map(String),
            p.template ?? "-",
          ]),
        ),
      );
    else if (what === "envs")
      print(got.envs, () =>
        table(
          ["env", "template", "desired", "idle", "running", "members"],
          (got.envs as EnvSummary[]).map((e) => [
            e.env,
            e.template,
            String(e.desired),
            String(e.idle),
            String(e.running),
            e.members.map((m) => `${m.name}:${m.state}`).join(",") || "-",
          ]),
        ),
      );
    else if (what === "templates")
      print(got.templates, () =>
        table(
          ["template", "ready", "cpu", "memory", "pools", "envs"],
          (got.templates as TemplateSummary[]).map((t) => [
            t.name,
            t.ready ? "yes" : `no: ${t.why ?? ""}`,
            String(t.resources?.limits?.cpu ?? t.resources?.requests?.cpu ?? "-"),
            String(t.resources?.limits?.memory ?? t.resources?.requests?.memory ?? "-"),
            t.pools.join(",") || "-",
            t.envs.join(",") || "-",
          ]),
        ),
      );
    else print(got.sandboxes, () => sandboxRows(got.sandboxes as SandboxView[], now));
    return 0;
  }
  if (command === "create") {
    const target = v.pool
      ? { pool: v.pool }
      : v.env
        ? { env: v.env }
        : v.template
          ? { template: v.template }
          : undefined;
    if (!target) {
      console.error(`error: create needs --pool, --env or --template\n${SANDBOX_USAGE}`);
      return 2;
    }
    const body = {
      ...target,
      ...(v.wait ? { wait: true } : {}),
      ...(v["wait-timeout"] ? { waitTimeout: Number(v["wait-timeout"]) } : {}),
      ...(v.timeout ? { timeout: Number(v.timeout) } : {}),
    };
    const created = (await progress(
      v.wait ? "waiting for the sandbox to run" : "claiming",
      call("POST", "/sandboxes", body),
    )) as SandboxView | undefined;
    if (!created) return 1;
    print(created, () => sandboxRows([created], now));
    return 0;
  }
  if (command === "delete" && what) {
    if (!(await call("DELETE", `/sandboxes/${encodeURIComponent(what)}`))) return 1;
    console.log(`released ${what}`);
    return 0;
  }
  if ((command === "pause" || command === "resume") && what) {
    const path = `/sandboxes/${encodeURIComponent(what)}/${command}`;
    const body = command === "resume" && v.timeout ? { timeout: Number(v.timeout) } : undefined;
    const done = (await progress(
      command === "pause" ? "pausing (committing its files)" : "resuming",
      call("POST", path, body),
    )) as SandboxView | undefined;
    if (!done) return 1;
    print(done, () => sandboxRows([done], now));
    return 0;
  }
  if (command === "history" && what) return sandboxHistory(call, print, what, now);
  if (command === "history") {
    const q = new URLSearchParams({
      ...(v.namespace ? { namespace: v.namespace } : {}),
      ...(v.pool ? { pool: v.pool } : {}),
      ...(v.limit ? { limit: v.limit } : {}),
    });
    const page = (await call("GET", `/history${q.size ? `?${q}` : ""}`)) as
      | { records: SandboxRecord[] }
      | undefined;
    if (!page) return 1;
    print(page.records, () => recordRows(page.records, now));
    return 0;
  }
  console.error(SANDBOX_USAGE);
  return 2;
}

/** recordRows lays out terminal history records, one line each. */
const recordRows = (records: readonly SandboxRecord[], now: Date) =>
  table(
    ["sandbox", "pool", "stop", "failure", "ended"],
    records.map((r) => [
      r.sandboxId,
      `${r.namespace}/${r.poolName}`,
      r.stopReason,
      r.failureReason ?? "-",
      age(r.terminatedAt, now),
    ]),
  );

/**
 * sandboxHistory prints one sandbox's history (GET /v1/history/{id}): its terminal record, or a
 * line saying it has not ended, then its pauses and resumes oldest first, each with its pod and,
 * for a pause, the bytes it committed.
 */
async function sandboxHistory(
  call: (method: string, path: string) => Promise<unknown>,
  print: (value: unknown, asTable: () => string) => void,
  id: string,
  now: Date,
): Promise<number> {
  const got = (await call("GET", `/history/${encodeURIComponent(id)}`)) as
    | { sandboxId: string; record?: SandboxRecord; events: LifecycleEvent[] }
    | undefined;
  if (!got) return 1;
  print(got, () => {
    const record = got.record ? recordRows([got.record], now) : `${got.sandboxId}: not ended`;
    const events = table(
      ["event", "n", "at", "ago", "pod", "bytes"],
      got.events.map((e) => [
        e.kind,
        String(e.n),
        e.at,
        age(e.at, now),
        e.podName,
        e.bytes === undefined ? "-" : String(e.bytes),
      ]),
    );
    return got.events.length ? `${record}\n\n${events}` : `${record}\n\nno pauses or resumes`;
  });
  return 0;
}
