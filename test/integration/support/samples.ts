import { randomBytes } from "node:crypto";
import type { CustomObjectsApi, KubernetesObject } from "@kubernetes/client-node";
import { readYamlObjects, samplesDir } from "../../../infra/cluster/install.ts";

export const GROUP = "agents.navix.sh";
export const VERSION = "v1alpha1";

/** Obj is an API object with a free-form spec and status, as tests build and read them. */
export type Obj = KubernetesObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> };

/**
 * Samples are infra/samples retargeted at one test's namespace, with a unique name for the
 * cluster-scoped template (referenced by the pool and the env) so files do not collide.
 */
export class Samples {
  readonly templateName = `python-${randomBytes(3).toString("hex")}`;

  private readonly custom: CustomObjectsApi;
  readonly ns: string;

  constructor(custom: CustomObjectsApi, ns: string) {
    this.custom = custom;
    this.ns = ns;
  }

  /** byKind returns fresh copies of the samples keyed by kind. */
  byKind(): Record<string, Obj> {
    const out: Record<string, Obj> = {};
    for (const o of readYamlObjects(samplesDir) as Obj[]) {
      if (o.kind === "Namespace") continue;
      const copy = structuredClone(o);
      if (copy.kind === "SandboxTemplate") copy.metadata!.name = this.templateName;
      else copy.metadata!.namespace = this.ns;
      if (copy.kind === "SandboxPool") copy.spec!.templateName = this.templateName;
      if (copy.kind === "SandboxEnv") (copy.spec!.templateRef as { name: string }).name = this.templateName;
      out[copy.kind!] = copy;
    }
    return out;
  }

  /** create creates obj (cluster-scoped for SandboxTemplate) and returns what the server stored. */
  async create(obj: Obj): Promise<Obj> {
    const plural = `${obj.kind!.toLowerCase()}s`;
    if (obj.kind === "SandboxTemplate") {
      return (await this.custom.createClusterCustomObject({
        group: GROUP,
        version: VERSION,
        plural,
        body: obj,
      })) as Obj;
    }
    return (await this.custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: this.ns,
      plural,
      body: obj,
    })) as Obj;
  }

  /** rejection returns the apiserver's error for a create that must fail. */
  async rejection(obj: Obj): Promise<{ code: number; message: string }> {
    try {
      await this.create(obj);
    } catch (e) {
      const err = e as { code?: number; body?: string };
      const body = JSON.parse(err.body ?? "{}") as { message?: string };
      return { code: err.code ?? 0, message: body.message ?? String(e) };
    }
    throw new Error(`expected ${obj.kind} ${obj.metadata?.name} to be rejected, but it was created`);
  }

  /** cleanup deletes the cluster-scoped template (namespaced objects go with the namespace). */
  async cleanup(): Promise<void> {
    await this.custom
      .deleteClusterCustomObject({
        group: GROUP,
        version: VERSION,
        plural: "sandboxtemplates",
        name: this.templateName,
      })
      .catch(() => {});
  }
}
