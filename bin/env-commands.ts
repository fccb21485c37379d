// The Env commands of the CLI (issue #26, section 3): list Envs, show one (members, groups), its
// Event timeline, and edit it (add/remove/set a member, set/remove a group). They speak to the
// apiserver of a kubeconfig, with its user's own rights, through the same planning as the console
// (lib/env/env-edit.ts), so RBAC and admission decide as they decide for kubectl.
import { parseArgs } from "node:util";
import { KubeConfig } from "@kubernetes/client-node";
import { EnvEditRefused, editEnv } from "../functions/envs/edit-env.ts";
import { readEnvOverview, readEnvTimeline } from "../functions/envs/read-env.ts";
import { nodeKubeTransport } from "../hosts/node/kube-transport.ts";
import { readState } from "../infra/cluster/state.ts";
import { age, table } from "../lib/cli/table.ts";
import type { EnvEditRejection } from "../lib/env/env-edit-rejection.ts";
import {
  CLEAR,
  EDIT_OPS,
  editFromFields,
  MEMBER_FIELDS,
  SCALE_DOWN_FIELDS,
  SCALE_UP_FIELDS,
} from "../lib/env/env-edit-request.ts";
import type { EnvOverview } from "../lib/env/env-overview.ts";
import { KubeClient } from "../lib/kube/client.ts";
import { KubeError } from "../lib/kube/errors.ts";

export const ENV_USAGE = `       agentbox env list [-n NAMESPACE] [-o json] [KUBE]
       agentbox env get <namespace>/<env> [-o json] [KUBE]
       agentbox env events <namespace>/<env> [--limit N] [-o json] [KUBE]
       agentbox env add-member <namespace>/<env> <member> [--replicas N] [MEMBER-CONFIG] [KUBE]
       agentbox env set-member <namespace>/<env> <member> [--replicas N] [MEMBER-CONFIG] [KUBE]
       agentbox env remove-member <namespace>/<env> <member> [KUBE]
       agentbox env set-group <namespace>/<env> <group> [--enabled true|false] [--min-replicas N] [--max-replicas N]
                 [--mode Conservative|Default|Aggressive] [--cooldown-seconds S] [--idle-threshold-seconds S]
                 [--idle-zero-quiet-window-seconds S] [--saturation-cooldown-seconds S]
                 [--idle-timeout-seconds S] [--stabilization-seconds S] [--protection-window-seconds S] [KUBE]
       agentbox env remove-group <namespace>/<env> <group> [KUBE]
       agentbox env refresh-member <namespace>/<env> <member> [--cluster-id ID] [KUBE]

MEMBER-CONFIG: --min-replicas N --max-replicas N --instance-type T --multiplier N --scaling-group G
  --priority N --scale-up-priority N --scale-down-priority N. A flag left out stays as it is;
  "${CLEAR}" removes a value (--max-replicas ${CLEAR}); --scaling-group ${CLEAR} takes a member out of autoscaling.
KUBE: --kubeconfig FILE, else --cluster NAME (a local cluster), else $KUBECONFIG / ~/.kube/config.
Edits act on the cluster segment --cluster-id ID (else $AGENTBOX_CLUSTER_ID; with --cluster, "local"),
with the kubeconfig user's own rights: RBAC and the admission webhook refuse as they refuse kubectl.`;

const kebab = (camel: string) => camel.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
const FIELD_FLAGS = [
  "replicas",
  "enabled",
  ...new Set([...MEMBER_FIELDS, ...SCALE_UP_FIELDS, ...SCALE_DOWN_FIELDS, "minReplicas", "maxReplicas"]),
];
const flagOptions = Object.fromEntries(FIELD_FLAGS.map((f) => [kebab(f), { type: "string" as const }]));

/** flagOf names the flag of an issue's field path (`config.maxReplicas` → `--max-replicas`). */
const flagOf = (path: string) => {
  const last = path.split(".").at(-1) ?? path;
  return FIELD_FLAGS.includes(last) ? `--${kebab(last)}` : last;
};

/** printRejection prints a refused edit: its message, status, and each field at fault. */
function printRejection(r: EnvEditRejection): number {
  console.error(`error: ${r.message} (${r.status} ${r.code})`);
  for (const f of r.fields) if (f.message !== r.message) console.error(`  ${f.path}: ${f.message}`);
  return 1;
}

/** parseFlags reads an `agentbox env` command line (throws on an unknown or ambiguous flag). */
const parseFlags = (argv: string[]) =>
  parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      kubeconfig: { type: "string" },
      cluster: { type: "string" },
      "cluster-id": { type: "string" },
      namespace: { type: "string", short: "n" },
      output: { type: "string", short: "o" },
      limit: { type: "string" },
      help: { type: "boolean", short: "h" },
      ...flagOptions,
    },
  });

/** envCommand runs one `agentbox env` command and returns the exit code (2: bad usage, 1: refused). */
export async function envCommand(argv: string[]): Promise<number> {
  let parsed: ReturnType<typeof parseFlags>;
  try {
    parsed = parseFlags(argv);
  } catch (e) {
    console.error(`error: ${e instanceof Error ? e.message : String(e)}\n\nusage: ${ENV_USAGE.trimStart()}`);
    return 2;
  }
  const { values: v, positionals } = parsed;
  const [, command = "", target = "", subject = ""] = positionals;
  const editing = (EDIT_OPS as readonly string[]).includes(command);
  const known = editing || ["list", "get", "events"].includes(command);
  if (v.help || !known || (command !== "list" && !target) || (editing && !subject)) {
    console.error(`usage: ${ENV_USAGE.trimStart()}`);
    return v.help ? 0 : 2;
  }
  const local = v.cluster ? readState(v.cluster) : undefined;
  if (v.cluster && !local) {
    console.error(`error: no local cluster "${v.cluster}" is running`);
    return 2;
  }
  const kc = new KubeConfig();
  if (v.kubeconfig) kc.loadFromFile(v.kubeconfig);
  else if (local) kc.loadFromFile(local.kubeconfig);
  else kc.loadFromDefault();
  const kube = new KubeClient(nodeKubeTransport(kc));
  const json = v.output === "json";
  try {
    if (command === "list") return await list(kube, v.namespace, json);
    const match = /^([a-z0-9-]+)\/([a-z0-9.-]+)$/.exec(target);
    if (!match) {
      console.error(`error: "${target}" is not <namespace>/<env>`);
      return 2;
    }
    const [, ns = "", name = ""] = match;
    if (command === "events") {
      const env = await kube.getEnv(ns, name);
      const members = (env.spec.clusters ?? []).flatMap((c) => (c.members ?? []).map((m) => m.name));
      const limit = Number(v.limit ?? 50);
      const entries = (await readEnvTimeline({ kube }, ns, name, members)).slice(0, limit);
      if (json) console.log(JSON.stringify(entries, null, 2));
      else
        console.log(
          table(
            ["age", "time", "type", "reason", "object", "message"],
            entries.map((e) => [age(e.time, new Date()), e.time, e.type, e.reason, e.object, e.message]),
          ),
        );
      return 0;
    }
    const clusterId = v["cluster-id"] ?? process.env.AGENTBOX_CLUSTER_ID ?? (local ? "local" : undefined);
    if (!clusterId) {
      console.error("error: which cluster segment? pass --cluster-id ID or set AGENTBOX_CLUSTER_ID");
      return 2;
    }
    const log = { debug() {}, info() {}, warn() {}, error() {} };
    if (command === "get") {
      const overview = await readEnvOverview({ kube, log }, clusterId, ns, name);
      if (!overview) {
        console.error(`error: SandboxEnv "${ns}/${name}" does not exist`);
        return 1;
      }
      if (json) console.log(JSON.stringify(overview, null, 2));
      else printOverview(overview);
      return 0;
    }
    const fields: Record<string, string | undefined> = {
      [command.endsWith("group") ? "group" : "member"]: subject,
    };
    for (const f of FIELD_FLAGS) fields[f] = (v as Record<string, unknown>)[kebab(f)] as string | undefined;
    const edit = editFromFields(command, fields);
    if (!edit.ok) {
      for (const i of edit.issues) console.error(`error: ${flagOf(i.path)}: ${i.message}`);
      return 2;
    }
    const user = kc.getCurrentUser()?.name ?? "unknown";
    const deps = {
      kube,
      log,
      now: () => new Date(),
      reporter: { controller: "agents.navix.sh/agentbox-cli", instance: "cli" },
    };
    const result = await editEnv(
      deps,
      clusterId,
      ns,
      name,
      edit.value,
      `agentbox CLI (kubeconfig user ${user})`,
    );
    console.log(`${result.env}: ${result.summary}`);
    return 0;
  } catch (e) {
    if (e instanceof EnvEditRefused) return printRejection(e.rejection);
    if (e instanceof KubeError && (e.status === 404 || e.status === 403)) {
      console.error(`error: ${e.message}`);
      return 1;
    }
    throw e;
  }
}

/** list prints the Envs of a namespace (or all) with their rollups, as `kubectl get sbe` would. */
async function list(kube: KubeClient, namespace: string | undefined, json: boolean): Promise<number> {
  const envs = (await kube.listEnvs(namespace)).items;
  if (json) {
    console.log(JSON.stringify(envs, null, 2));
    return 0;
  }
  const cond = (e: (typeof envs)[number], type: string) =>
    e.status?.conditions?.find((c) => c.type === type)?.status ?? "-";
  console.log(
    table(
      ["env", "template", "members", "desired", "idle", "running", "ready", "autoscaling"],
      envs.map((e) => [
        `${e.metadata?.namespace}/${e.metadata?.name}`,
        e.spec.templateRef.name,
        String(e.status?.memberCount ?? 0),
        String(e.status?.desiredReplicas ?? 0),
        String(e.status?.idleReplicas ?? 0),
        String(e.status?.runningReplicas ?? 0),
        cond(e, "Ready"),
        cond(e, "AutoscalingActive"),
      ]),
    ),
  );
  return 0;
}

/** settings prints a policy as `field=value,…`. */
const settings = (policy: Record<string, unknown>) =>
  Object.entries(policy)
    .map(([k, x]) => `${k}=${String(x)}`)
    .join(",");

/** printOverview prints one Env: its members, its groups and its conditions. */
function printOverview(o: EnvOverview): void {
  const n = (x: number | undefined) => (x === undefined ? "-" : String(x));
  console.log(`SandboxEnv ${o.key}  template ${o.templateRef}  segment ${o.clusterId}\n`);
  console.log(
    table(
      ["member", "state", "replicas", "idle", "running", "min", "max", "group", "shape", "pool", "revision"],
      o.members.map((m) => [
        m.name,
        m.state,
        String(m.replicas),
        String(m.idle),
        String(m.running),
        n(m.config.minReplicas),
        n(m.config.maxReplicas),
        m.scalingGroup || "-",
        m.config.instanceType ? `${m.config.instanceType}x${m.config.multiplier ?? "?"}` : "-",
        m.pool ?? "-",
        `${m.revision}${m.behind ? " (behind the template: refresh-member)" : ""}`,
      ]),
    ),
  );
  if (o.groups.length > 0) {
    console.log("");
    console.log(
      table(
        ["group", "enabled", "min", "max", "desired", "idle", "running", "scale-up", "scale-down"],
        o.groups.map((g) => [
          g.name,
          String(g.enabled),
          n(g.minReplicas),
          n(g.maxReplicas),
          String(g.totals.desired),
          String(g.totals.idle),
          String(g.totals.running),
          settings(g.scaleUpPolicy),
          settings(g.scaleDownPolicy),
        ]),
      ),
    );
  }
  for (const c of o.conditions)
    console.log(`\n${c.type}=${c.status} ${c.reason}${c.message ? `: ${c.message}` : ""}`);
}
