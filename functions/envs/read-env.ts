import { type EnvOverview, envOverview } from "../../lib/env/env-overview.ts";
import { envTimeline, type TimelineEntry } from "../../lib/env/env-timeline.ts";
import type { HostDeps } from "../host-deps.ts";
import type { CatalogDeps } from "../instance-types.ts";
import { withCatalog } from "../instance-types.ts";
import { readEnvSnapshot } from "../steps/env-snapshot.ts";

/** EnvReadDeps is what reading an Env's page needs (the catalog's settings when it names a type). */
export type EnvReadDeps = CatalogDeps;

/**
 * readEnvOverview reads one Env as its run would (readEnvSnapshot, the catalog when it names an
 * instance type) and builds its overview for the segment of clusterId; undefined when the Env
 * does not exist.
 */
export async function readEnvOverview(
  deps: EnvReadDeps,
  clusterId: string,
  namespace: string,
  name: string,
): Promise<EnvOverview | undefined> {
  const read = await readEnvSnapshot(deps.kube, namespace, name, clusterId);
  if (!read) return undefined;
  return envOverview(await withCatalog(deps, read), clusterId);
}

/**
 * readEnvTimeline reads the Events about an Env and about the pools of its local members (one
 * field-selected list for the Env, one per member: exactly their Events, however busy the
 * namespace's pods are) and orders them newest first (envTimeline). `members` are the member
 * names to read for (the overview's).
 */
export async function readEnvTimeline(
  deps: Pick<HostDeps, "kube">,
  namespace: string,
  name: string,
  members: readonly string[],
): Promise<TimelineEntry[]> {
  const about = (kind: string, object: string) =>
    deps.kube
      .listEvents(namespace, `involvedObject.kind=${kind},involvedObject.name=${object}`)
      .then((l) => l.items);
  const lists = await Promise.all([
    about("SandboxEnv", name),
    ...members.map((m) => about("SandboxPool", m)),
  ]);
  return envTimeline(lists.flat());
}
