// Admission rules for the instance types an Env names, checked against the catalog the webhook
// read for the review (ADR 0032): each named type must be a valid catalog entry and each
// multiplier must fall within the range that entry declares (seed 002, SandboxEnvDefaults.Multiplier).
import type { SandboxEnv } from "../crd/sandbox-env.ts";
import { resolveInstanceType } from "../env/instance-sizing.ts";
import type { InstanceTypeCatalog } from "../env/instance-types.ts";
import type { Check } from "./check.ts";
import { members } from "./env-checks.ts";

/**
 * CatalogLookup is the catalog a review was checked against (`source` names its ConfigMap,
 * "namespace/name"): read (undefined when the ConfigMap does not exist), or unreadable (`error`).
 */
export type CatalogLookup = { source: string } & (
  | { catalog: InstanceTypeCatalog | undefined }
  | { error: string }
);

/** Named is one instanceType an Env names, with the path of its sizing fields. */
interface Named {
  /** path is the object holding instanceType and multiplier (spec.defaults, a member's config). */
  path: string;
  instanceType: string;
  multiplier: number | undefined;
}

/** namedInstanceTypes lists the instance types the Env names: its defaults, then every member's. */
function namedInstanceTypes(env: SandboxEnv): Named[] {
  const defaults = env.spec.defaults;
  return [
    ...(defaults?.instanceType
      ? [{ path: "spec.defaults", instanceType: defaults.instanceType, multiplier: defaults.multiplier }]
      : []),
    ...members(env).flatMap(({ member, path }) =>
      member.config?.instanceType
        ? [
            {
              path: `${path}.config`,
              instanceType: member.config.instanceType,
              multiplier: member.config.multiplier,
            },
          ]
        : [],
    ),
  ];
}

/**
 * instanceTypeInCatalog: a named type is a valid entry of the catalog. A catalog that could not be
 * read fails the review closed (ADR 0003); one whose ConfigMap does not exist checks nothing
 * (no catalog: the types an Env names are only echoed, as before the catalog).
 */
function instanceTypeInCatalog(lookup: CatalogLookup): Check<SandboxEnv> {
  return {
    name: "instance-type-in-catalog",
    run: (env) =>
      namedInstanceTypes(env).flatMap(({ path, instanceType, multiplier }) => {
        if ("error" in lookup)
          return [
            {
              path: `${path}.instanceType`,
              message: `cannot be checked: the instance type catalog (ConfigMap ${lookup.source}) could not be read (${lookup.error}); retry`,
            },
          ];
        if (!lookup.catalog) return [];
        const resolved = resolveInstanceType(lookup.catalog, instanceType, multiplier);
        return !resolved.ok && resolved.field === "instanceType"
          ? [{ path: `${path}.instanceType`, message: resolved.problem }]
          : [];
      }),
  };
}

/**
 * multiplierInRange: a multiplier falls within the range its type declares. An unset one is
 * instance-type-requires-multiplier's to refuse.
 */
function multiplierInRange(lookup: CatalogLookup): Check<SandboxEnv> {
  return {
    name: "multiplier-in-range",
    run: (env) => {
      if ("error" in lookup || !lookup.catalog) return [];
      const catalog = lookup.catalog;
      return namedInstanceTypes(env).flatMap(({ path, instanceType, multiplier }) => {
        if (!multiplier) return [];
        const resolved = resolveInstanceType(catalog, instanceType, multiplier);
        return !resolved.ok && resolved.field === "multiplier"
          ? [{ path: `${path}.multiplier`, message: resolved.problem }]
          : [];
      });
    },
  };
}

/** instanceTypeChecks are the Env checks that need the catalog. */
export function instanceTypeChecks(lookup: CatalogLookup): Check<SandboxEnv>[] {
  return [instanceTypeInCatalog(lookup), multiplierInRange(lookup)];
}
