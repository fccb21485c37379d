// The Cloudflare Worker host: the same hono app and the same steps as the Node host, with the
// apiserver reached over fetch (a tunnel, or an mTLS binding) and history in D1. `fetch` serves
// the API, the admission and audit webhooks and the manual triggers; an audit batch's reconciles
// run after the answer (waitUntil). `scheduled` (cron, per minute) runs the tick.

import { envsToRun } from "../../functions/runs/env-triggers.ts";
import { reconcileEnv } from "../../functions/runs/reconcile-env.ts";
import { reconcilePod } from "../../functions/runs/reconcile-pod.ts";
import { reconcilePool, STEP_NAMES } from "../../functions/runs/reconcile-pool.ts";
import { reconcileTemplate } from "../../functions/runs/reconcile-template.ts";
import { refreshMember } from "../../functions/runs/refresh-member.ts";
import { tick } from "../../functions/runs/tick.ts";
import { UsageSampler } from "../../functions/usage/usage-sampler.ts";
import { orMissing } from "../../lib/kube/errors.ts";
import { EXPOSITION_CONTENT_TYPE, poolExposition } from "../../lib/metrics/pool-exposition.ts";
import { auditEnvTargets, auditPodTargets, auditTargets } from "../../lib/triggers/audit-targets.ts";
import { consoleLog } from "../../lib/util/log.ts";
import { createApp } from "../app.ts";
import { readWorkerEnv, type WorkerBindings } from "./config.ts";
import type { D1Like } from "./d1-history.ts";
import { workerDeps } from "./deps.ts";
import { isolateOf } from "./isolate.ts";
import { misconfigured } from "./misconfigured.ts";

/** WorkerContext is the part of the Workers ExecutionContext the host uses. */
interface WorkerContext {
  waitUntil(promise: Promise<unknown>): void;
}

/** WORKER_SAMPLE_SECONDS is the Worker's sampling period: its cron's, once a minute (one sample an invocation). */
const WORKER_SAMPLE_SECONDS = 60;

export default {
  async fetch(request: Request, env: WorkerBindings, ctx: WorkerContext): Promise<Response> {
    const log = consoleLog({ host: "worker" });
    const config = readWorkerEnv(env);
    if (!config.ok) return misconfigured(request, env.ADMIN_TOKEN, config.errors, log);
    const api = await workerDeps(config.value, env, log);
    const app = createApp({
      callbackToken: config.value.CALLBACK_TOKEN,
      adminToken: config.value.ADMIN_TOKEN,
      logger: log,
      api,
      consoleSessionReads: isolateOf(env.HISTORY as unknown as D1Like).consoleSessionReads,
      ...(config.value.SANDBOX_DOMAIN ? { sandboxDomain: config.value.SANDBOX_DOMAIN } : {}),
      // Pool gauges only, from one list of pools per scrape (README, Metrics).
      scrape: {
        token: config.value.METRICS_TOKEN ?? config.value.ADMIN_TOKEN,
        collect: async () => ({
          contentType: EXPOSITION_CONTENT_TYPE,
          body: poolExposition((await api.kube.listPools(undefined, { cached: true })).items),
        }),
      },
      onAuditEvents: (list) => {
        // After the 200: each written pod's own steps, then each touched pool once.
        const pods = [...auditPodTargets(list.items)].map(([key, target]) => {
          const [ns = "", pool = "", pod = ""] = key.split("/");
          return reconcilePod(api, ns, pool, pod, target);
        });
        const pools = auditTargets(list.items).map((key) => {
          const [ns = "", name = ""] = key.split("/");
          return reconcilePool(api, ns, name);
        });
        const envTargets = auditEnvTargets(list.items);
        const clusterId = api.clusterId;
        const envs = clusterId
          ? envsToRun(api.kube, envTargets, clusterId).then((runs) =>
              Promise.all(
                runs.map(({ key }) => {
                  const [ns = "", name = ""] = key.split("/");
                  return reconcileEnv(api, ns, name);
                }),
              ),
            )
          : Promise.resolve([]);
        // A written template's status (its pools' state reaches it at the next tick).
        const templates = envTargets.templates.map((name) => reconcileTemplate(api, name));
        ctx.waitUntil(
          Promise.allSettled([...pods, ...pools, envs, ...templates]).then((runs) => {
            const failed = runs.filter((r) => r.status === "rejected");
            if (failed.length)
              log.error({ failed: failed.map((r) => String(r.reason)) }, "audit-triggered runs failed");
          }),
        );
      },
      functions: {
        steps: STEP_NAMES,
        run: (step, namespace, pool) => reconcilePool(api, namespace, pool, step),
        runEnv: (namespace, env) => reconcileEnv(api, namespace, env),
        refreshMember: (namespace, env, member) => refreshMember(api, namespace, env, member),
      },
      readTemplate: (name) => orMissing(api.kube.getTemplate(name)),
    });
    const response = await app.fetch(request, env, ctx as never);
    // A waiting create's last pending-requests write, and create stamps, must outlive the response.
    if (api.pending) ctx.waitUntil(api.pending.flushed());
    if (api.stamps) ctx.waitUntil(api.stamps.flushed());
    return response;
  },

  /**
   * scheduled runs TICK_PASSES passes over every pool, TICK_SPACING_SECONDS apart (Workers cron
   * fires at most once a minute; 5 passes 10 s apart keep the Node host's 10 s safety net), over
   * TICK_NAMESPACE's pools and Envs only when it is set (a namespace-scoped token can list nothing
   * else). A pass that fails logs one error line and fails the invocation: never a silent success.
   *
   * The sandboxes' resource use is sampled once an invocation, beside the first pass, not at each:
   * the samples share the invocation's subrequest budget (Cloudflare's per-invocation limit, 1000
   * on the paid plan) with the passes, and a sample costs one list of the claimed pods plus 2
   * subrequests per node hosting a sandbox (its Node and its kubelet's figures through the node
   * proxy): nodes × 2 once, not TICK_PASSES times. A deployment over a few hundred such nodes
   * outgrows this: sample from a Node host there. The Worker's series has one sample a minute.
   */
  async scheduled(_event: unknown, env: WorkerBindings, _ctx: WorkerContext): Promise<void> {
    const log = consoleLog({ host: "worker", trigger: "cron" });
    const config = readWorkerEnv(env);
    if (!config.ok) {
      log.error({ errors: config.errors }, "tick failed: misconfigured");
      throw new Error(`misconfigured: ${config.errors.join("; ")}`);
    }
    const deps = await workerDeps(config.value, env, log);
    const spacingMs = config.value.TICK_SPACING_SECONDS * 1000;
    // The sandboxes' resource use, once an invocation (see scheduled's doc): `at` rounded to the
    // cron's minute, which also times the hourly forgetting of old series (forgetDue).
    const usage = new UsageSampler(deps, {
      periodSeconds: WORKER_SAMPLE_SECONDS,
      ...(config.value.TICK_NAMESPACE ? { namespace: config.value.TICK_NAMESPACE } : {}),
    });
    for (let pass = 0; pass < config.value.TICK_PASSES; pass++) {
      if (pass > 0) await new Promise((r) => setTimeout(r, spacingMs));
      const sampled =
        pass === 0
          ? usage.sample().catch((err: unknown) => {
              log.warn({ err: String(err) }, "usage sampling failed");
            })
          : undefined;
      try {
        const report = await tick(deps, {
          periodMs: spacingMs,
          jitter: 0,
          concurrency: config.value.TICK_CONCURRENCY,
          ...(config.value.TICK_NAMESPACE ? { namespace: config.value.TICK_NAMESPACE } : {}),
        });
        log.info({ pass, ...report }, "tick");
        if (report.envsSkipped)
          log.error({ why: report.envsSkipped }, "SandboxEnvs are not reconciled: set CLUSTER_ID");
        if (report.failed > 0)
          throw new Error(`${report.failed} of ${report.pools} pools and ${report.envs} Envs failed`);
      } catch (e) {
        log.error({ pass, err: String(e) }, "tick failed");
        throw e;
      } finally {
        await sampled;
      }
    }
  },
};
