// Reading the instance type catalog (ADR 0032) for the Env runs and the validating webhook: from
// etcd, a missing ConfigMap being no catalog and any other failure an error.
import { namesInstanceType } from "../lib/env/instance-sizing.ts";
import {
  type ConfigMapRef,
  catalogProblems,
  DEFAULT_INSTANCE_TYPES,
  type InstanceTypeCatalog,
  parseInstanceTypeCatalog,
} from "../lib/env/instance-types.ts";
import type { EnvSnapshot } from "../lib/env/plan-env.ts";
import { orMissing } from "../lib/kube/errors.ts";
import type { HostDeps } from "./host-deps.ts";

/** catalogRef is where this host's catalog lives (DEFAULT_INSTANCE_TYPES unless configured). */
export function catalogRef(deps: Partial<Pick<HostDeps, "instanceTypes">>): ConfigMapRef {
  return deps.instanceTypes ?? DEFAULT_INSTANCE_TYPES;
}

/**
 * CatalogDeps is what reading the catalog needs; the catalog's ConfigMap, the shared read and the
 * once-only warnings are optional, so the webhook (unshared) and the CLI (defaults) read it too.
 */
export type CatalogDeps = Pick<HostDeps, "kube" | "log"> &
  Partial<Pick<HostDeps, "instanceTypes" | "catalogReads" | "noticed">>;

/**
 * readInstanceTypes reads the instance type catalog from etcd (a catalog changed a moment ago is
 * seen, so members are never sized from a stale copy and then resized), shared for a moment among
 * this process's runs when deps.catalogReads is set. Undefined when its ConfigMap does not exist
 * (no catalog: members keep their own resources); any other failure rejects, so the caller decides
 * nothing from a catalog it could not read. Invalid entries are logged once per process.
 */
export async function readInstanceTypes(deps: CatalogDeps): Promise<InstanceTypeCatalog | undefined> {
  const ref = catalogRef(deps);
  const read = async () => {
    const map = await orMissing(deps.kube.getConfigMap(ref.namespace, ref.name));
    return map ? parseInstanceTypeCatalog(`${ref.namespace}/${ref.name}`, map.data) : undefined;
  };
  const catalog = await (deps.catalogReads ? deps.catalogReads.get(read) : read());
  const problems = catalog ? catalogProblems(catalog) : [];
  const note = `instance type catalog ${catalog?.source}: ${problems.join("; ")}`;
  if (problems.length > 0 && !deps.noticed?.has(note)) {
    deps.noticed?.add(note);
    deps.log.warn(
      { catalog: catalog?.source, problems },
      "instance type catalog: invalid entries are ignored; members naming them are Inconsistent",
    );
  }
  return catalog;
}

/**
 * withCatalog adds the catalog to an Env's snapshot when the Env names an instance type and the
 * snapshot does not carry it yet (a tick's does: readCluster reads it once for every Env): one
 * read, shared; none for an Env that names none.
 */
export async function withCatalog(
  deps: Parameters<typeof readInstanceTypes>[0],
  snapshot: EnvSnapshot,
): Promise<EnvSnapshot> {
  if (snapshot.catalog !== undefined || !namesInstanceType(snapshot.env)) return snapshot;
  return { ...snapshot, catalog: (await readInstanceTypes(deps)) ?? null };
}

/**
 * admissionCatalog is how the validating webhook reads the catalog: from etcd on every review
 * that needs it (never a shared answer: a catalog created a moment ago must check the next Env).
 */
export function admissionCatalog(deps: Parameters<typeof readInstanceTypes>[0]): {
  source: string;
  read: () => Promise<InstanceTypeCatalog | undefined>;
} {
  const ref = catalogRef(deps);
  const { catalogReads: _shared, ...unshared } = deps;
  return { source: `${ref.namespace}/${ref.name}`, read: () => readInstanceTypes(unshared) };
}
