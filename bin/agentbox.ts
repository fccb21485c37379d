#!/usr/bin/env node
// agentbox: operator CLI. `agentbox reconcile <namespace>/<pool> [--step NAME]` runs the reconcile
// steps for one pool right here, `agentbox refresh-template <namespace>/<pool>` re-renders a pool
// from its template, `agentbox reconcile-env <namespace>/<env>` runs an Env's step, `agentbox
// refresh-member <namespace>/<env> <member>` re-renders an Env member from its template; each against
// the API server of the current kubeconfig (or of the local cluster named by --cluster), printing
// what it did.
import { parseArgs } from "node:util";
import { KubeConfig } from "@kubernetes/client-node";
import { createApiKey } from "../functions/api/create-api-key.ts";
import { listApiKeys, revokeApiKey } from "../functions/api/manage-api-keys.ts";
import { hostDeps } from "../functions/host-deps.ts";
import { type EnvReport, reconcileEnv } from "../functions/runs/reconcile-env.ts";
import { type PoolReport, RECONCILE, reconcilePool, STEP_NAMES } from "../functions/runs/reconcile-pool.ts";
import { type MemberRefreshReport, refreshMember } from "../functions/runs/refresh-member.ts";
import type { ActionOutcome } from "../functions/steps/execute.ts";
import { Misconfigured, NotFound, StepRefused } from "../functions/steps/step.ts";
import { readPostgresHistory } from "../hosts/node/history-settings.ts";
import { nodeKubeTransport, nodeKubeWatch } from "../hosts/node/kube-transport.ts";
import { openHistory } from "../hosts/node/open-history.ts";
import { readState } from "../infra/cluster/state.ts";
import { decodeKeyEntry, encodeKeyEntry } from "../lib/claims/api-keys.ts";
import { KubeClient } from "../lib/kube/client.ts";
import { ENV_USAGE, envCommand } from "./env-commands.ts";
import { SANDBOX_COMMANDS, SANDBOX_USAGE, sandboxCommand } from "./sandbox-commands.ts";

const USAGE = `usage: agentbox reconcile <namespace>/<pool> [--step NAME] [--kubeconfig FILE | --cluster NAME] [--history FILE]
       agentbox refresh-template <namespace>/<pool> [--kubeconfig FILE | --cluster NAME]
       agentbox reconcile-env <namespace>/<env> [--cluster-id ID] [--kubeconfig FILE | --cluster NAME]
       agentbox refresh-member <namespace>/<env> <member> [--cluster-id ID] [--kubeconfig FILE | --cluster NAME]
       agentbox api-key create --team TEAM --user USER [--admin] [--keys NAMESPACE/NAME] [--kubeconfig FILE | --cluster NAME]
       agentbox api-key list [--keys NAMESPACE/NAME] [--kubeconfig FILE | --cluster NAME]
       agentbox api-key revoke <KEY | KEY-ID> [--keys NAMESPACE/NAME] [--kubeconfig FILE | --cluster NAME]
${SANDBOX_USAGE}
${ENV_USAGE}

steps: ${STEP_NAMES.join(", ")} (default: reconcile = all but refresh-template, in order)
refresh-template re-renders a standalone pool from its template's current revision, its overrides re-applied.
reconcile-env runs the Env step for the segment --cluster-id (default $AGENTBOX_CLUSTER_ID; with --cluster, "local").
refresh-member re-renders a member of that segment from its template's current revision, its Env's overrides and config re-applied.
The kubeconfig is --kubeconfig, else the local cluster --cluster NAME, else $KUBECONFIG / ~/.kube/config / in-cluster.
Records go to the SQLite file --history, else PostgreSQL when $AGENTBOX_HISTORY_URL is set (its AGENTBOX_HISTORY_* settings),
else $AGENTBOX_HISTORY_PATH, else the local cluster's history.sqlite.`;

type Values = {
  step: string;
  kubeconfig?: string;
  cluster?: string;
  history?: string;
  "cluster-id"?: string;
  team?: string;
  user?: string;
  admin: boolean;
  keys: string;
  help?: boolean;
};

const COMMANDS = new Set(["reconcile", "refresh-template", "reconcile-env", "refresh-member"]);

async function main(): Promise<number> {
  const first = process.argv[2] ?? "";
  if (SANDBOX_COMMANDS.has(first)) return sandboxCommand(process.argv.slice(2));
  // `env refresh-member` is refresh-member; the other env commands are env-commands.ts's.
  if (first === "env" && process.argv[3] === "refresh-member") process.argv.splice(2, 2, "refresh-member");
  else if (first === "env") return envCommand(process.argv.slice(2));
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      step: { type: "string", default: RECONCILE },
      kubeconfig: { type: "string" },
      cluster: { type: "string" },
      history: { type: "string" },
      "cluster-id": { type: "string" },
      team: { type: "string" },
      user: { type: "string" },
      admin: { type: "boolean", default: false },
      keys: { type: "string", default: "agentbox-system/agentbox-api-keys" },
      help: { type: "boolean", short: "h" },
    },
  });
  const [command = "", target, memberName] = positionals;
  if (command === "api-key" && target === "create") return apiKeyCreate(values);
  if (command === "api-key" && target === "list") return apiKeyList(values);
  if (command === "api-key" && target === "revoke" && positionals[2])
    return apiKeyRevoke(values, positionals[2]);
  if (values.help || !COMMANDS.has(command) || !target || (command === "refresh-member" && !memberName)) {
    console.error(USAGE);
    return values.help ? 0 : 2;
  }
  const match = /^([a-z0-9-]+)\/([a-z0-9.-]+)$/.exec(target);
  if (!match) {
    console.error(`error: "${target}" is not <namespace>/<name>\n\n${USAGE}`);
    return 2;
  }
  const step = command === "refresh-template" ? "refresh-template" : values.step;
  if (!STEP_NAMES.includes(step)) {
    console.error(`error: no step "${step}"; choose one of: ${STEP_NAMES.join(", ")}`);
    return 2;
  }
  const local = values.cluster ? readState(values.cluster) : undefined;
  if (values.cluster && !local) {
    console.error(
      `error: no local cluster "${values.cluster}" is running (npm run cluster -- up --name ${values.cluster})`,
    );
    return 2;
  }
  const kc = new KubeConfig();
  if (values.kubeconfig) kc.loadFromFile(values.kubeconfig);
  else if (local) kc.loadFromFile(local.kubeconfig);
  else kc.loadFromDefault();
  const clusterId = values["cluster-id"] ?? process.env.AGENTBOX_CLUSTER_ID ?? (local ? "local" : undefined);
  const historyPath =
    values.history ??
    process.env.AGENTBOX_HISTORY_PATH ??
    (local ? `${local.dir}/history.sqlite` : "history.sqlite");
  const database = values.history
    ? { ok: true as const, value: undefined }
    : readPostgresHistory(process.env);
  if (!database.ok) {
    console.error(`error: ${database.errors.join("; ")}`);
    return 2;
  }
  const log = { debug() {}, info() {}, warn() {}, error() {} };
  const history = await openHistory(
    { historyPath, ...(database.value ? { historyDatabase: database.value } : {}) },
    log,
  );
  const deps = hostDeps({
    kube: new KubeClient(nodeKubeTransport(kc)),
    watch: nodeKubeWatch(kc),
    history: history.store,
    log,
    reporter: { controller: "agents.navix.sh/agentbox-cli", instance: "cli" },
    // The local cluster (npm start) is segment "local"; anywhere else the ID must be said.
    ...(clusterId ? { clusterId } : {}),
  });
  try {
    const [, ns = "", name = ""] = match;
    if (command === "reconcile-env") return printEnvReport(await reconcileEnv(deps, ns, name));
    if (command === "refresh-member")
      return printMemberReport(await refreshMember(deps, ns, name, memberName ?? ""));
    return printPoolReport(await reconcilePool(deps, ns, name, step));
  } catch (e) {
    if (e instanceof StepRefused || e instanceof Misconfigured || e instanceof NotFound) {
      const kind =
        e instanceof StepRefused ? "refused" : e instanceof NotFound ? "not found" : "misconfigured";
      console.error(`${kind}: ${e.message}`);
      return e instanceof Misconfigured ? 2 : 1;
    }
    throw e;
  } finally {
    await history.close();
  }
}

/** outcomeLine is one write of a report, as the CLI prints it. */
function outcomeLine(o: ActionOutcome): string {
  return `  ${o.result.padEnd(8)} ${o.target}  ${o.why}${o.record ? ` [record ${o.record}]` : ""}${o.error ? `: ${o.error}` : ""}`;
}

function printPoolReport(report: PoolReport): number {
  if (!report.found) {
    console.log(`${report.pool}: no such pool`);
    return 1;
  }
  if (report.steps.length === 0) console.log(`${report.pool}: nothing to do`);
  for (const s of report.steps) {
    console.log(`${s.step}:`);
    for (const o of s.outcomes) console.log(outcomeLine(o));
  }
  return report.steps.some((s) => s.outcomes.some((o) => o.result === "error")) ? 1 : 0;
}

function printEnvReport(report: EnvReport): number {
  if (!report.found) {
    console.log(`${report.env}: no such SandboxEnv`);
    return 1;
  }
  if (report.outcomes.length === 0) console.log(`${report.env}: nothing to do`);
  for (const o of report.outcomes) console.log(outcomeLine(o));
  return report.outcomes.some((o) => o.result === "error") ? 1 : 0;
}

function printMemberReport(report: MemberRefreshReport): number {
  console.log(
    `${report.env} member ${report.member}: ${report.outcomes.length === 0 ? "nothing to do, " : ""}${report.note}`,
  );
  for (const o of report.outcomes) console.log(outcomeLine(o));
  return report.outcomes.some((o) => o.result !== "done") ? 1 : 0;
}

/** apiKeyCreate mints an API key for a tenant and prints it once (only its hash is stored). */
async function apiKeyCreate(values: Values): Promise<number> {
  const tenant = {
    team: values.team ?? "",
    user: values.user ?? "",
    ...(values.admin ? { admin: true } : {}),
  };
  if (!decodeKeyEntry(encodeKeyEntry(tenant, new Date()))) {
    console.error(
      "error: --team and --user are required, each a label value (letters, digits, '-', '_', '.'; at most 63)",
    );
    return 2;
  }
  const { kube, apiKeys } = keysDeps(values);
  const { namespace, name } = apiKeys;
  const key = await createApiKey({ kube, apiKeys, now: () => new Date() }, tenant);
  console.error(
    `API key for team ${tenant.team}, user ${tenant.user}${tenant.admin ? " (admin)" : ""}, stored hashed in ${namespace}/${name}:`,
  );
  console.log(key);
  return 0;
}

/** keysDeps is the client and the keys Secret the api-key commands act on. */
function keysDeps(values: Values) {
  const [namespace = "", name = ""] = values.keys.split("/");
  const kc = new KubeConfig();
  const local = values.cluster ? readState(values.cluster) : undefined;
  if (values.kubeconfig) kc.loadFromFile(values.kubeconfig);
  else if (local) kc.loadFromFile(local.kubeconfig);
  else kc.loadFromDefault();
  return { kube: new KubeClient(nodeKubeTransport(kc)), apiKeys: { namespace, name } };
}

/** apiKeyList prints the stored keys: ID, team, user, admin, created (never a usable key). */
async function apiKeyList(values: Values): Promise<number> {
  const keys = await listApiKeys(keysDeps(values));
  console.log("ID\tTEAM\tUSER\tADMIN\tCREATED");
  for (const k of keys)
    console.log(
      "garbled" in k
        ? `${k.id}\t(garbled entry: authenticates nobody)`
        : `${k.id}\t${k.team}\t${k.user}\t${k.admin}\t${k.createdAt ?? "-"}`,
    );
  return 0;
}

/** apiKeyRevoke removes one key, by the key or its listed ID. */
async function apiKeyRevoke(values: Values, keyOrId: string): Promise<number> {
  const outcome = await revokeApiKey(keysDeps(values), keyOrId);
  if (!outcome.ok) {
    console.error(`error: ${outcome.message}`);
    return 1;
  }
  console.log(`revoked ${outcome.id}`);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    console.error(`error: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  },
);
