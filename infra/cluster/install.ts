import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  ApiextensionsV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type KubernetesObject,
} from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";
import { renderWebhookConfigs } from "../webhooks/render.ts";
import { serverSideApply } from "./apply.ts";
import { waitFor } from "./http.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const FIELD_MANAGER = "agentbox-functions";

/** readYamlObjects loads every document of every .yaml file in dir (sorted by file name). */
export function readYamlObjects(dir: string): KubernetesObject[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith(".yaml"))
    .sort()
    .flatMap((f) =>
      parseAllDocuments(readFileSync(join(dir, f), "utf8")).map((d) => d.toJS() as KubernetesObject),
    )
    .filter((o) => o?.kind);
}

/** apply server-side-applies objects with our field manager (idempotent, safe to repeat). */
export async function apply(kc: KubeConfig, objects: KubernetesObject[]): Promise<void> {
  await serverSideApply(kc, objects, FIELD_MANAGER);
}

/**
 * installCrds applies crds/*.yaml and waits until the apiserver serves every one of them:
 * Established, and a list answered (right after establishment the watch cache may still answer
 * "429 storage is (re)initializing").
 */
export async function installCrds(kc: KubeConfig): Promise<string[]> {
  const crds = readYamlObjects(join(ROOT, "crds"));
  await apply(kc, crds);
  const ext = kc.makeApiClient(ApiextensionsV1Api);
  const names = crds.map((c) => c.metadata!.name!);
  await waitFor("CRDs Established", 30_000, async () => {
    for (const name of names) {
      const crd = await ext.readCustomResourceDefinition({ name });
      if (!crd.status?.conditions?.some((c) => c.type === "Established" && c.status === "True")) return false;
    }
    return true;
  });
  const custom = kc.makeApiClient(CustomObjectsApi);
  await waitFor("CRDs served", 30_000, async () => {
    for (const crd of crds as {
      spec: { group: string; names: { plural: string }; versions: { name: string }[] };
    }[]) {
      const { group, names: n, versions } = crd.spec;
      await custom.listClusterCustomObject({
        group,
        version: versions[0]?.name ?? "",
        plural: n.plural,
        limit: 1,
      });
    }
    return true;
  });
  return names;
}

/** registerWebhooks points the apiserver's admission webhooks for our kinds at baseUrl. */
export async function registerWebhooks(kc: KubeConfig, baseUrl: string, caFile: string): Promise<void> {
  const { validating, mutating } = renderWebhookConfigs(baseUrl, readFileSync(caFile, "utf8"));
  await apply(kc, [validating, mutating]);
}

/** samplesDir is infra/samples: example objects that `npm start` applies. */
export const samplesDir = join(ROOT, "infra", "samples");
