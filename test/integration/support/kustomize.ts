// kustomize, as far as infra/deploy uses it, read without the kustomize binary (the tests' fresh
// machine has none): `resources` (files and directories, recursively), `components` (each a
// `kind: Component` folder whose resources are added and whose patches then apply to all, after
// the includer's resources and before its own patches) and `patches` that are RFC 6902 JSON
// patches with a target, under kustomize's own rules: a file must lie inside its
// kustomization's folder, and a folder may not include a folder that contains it (an overlay
// inside its base is refused as a cycle). Anything else in a kustomization fails loudly, so an
// overlay never relies on a feature this reading would silently skip.
import { readFileSync, statSync } from "node:fs";
import { join, resolve, sep } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { parse, parseAllDocuments } from "yaml";
import type { JsonPatchOp } from "../../../lib/kube/json-patch.ts";

/** Manifest is what every Kubernetes object in a YAML file has. */
export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
}

/** PatchTarget selects the objects a patch applies to, as kustomize's `target` does. */
interface PatchTarget {
  group?: string;
  version?: string;
  kind: string;
  name: string;
  namespace?: string;
}

interface Kustomization {
  apiVersion?: string;
  kind?: string;
  resources?: string[];
  components?: string[];
  patches?: { target?: PatchTarget; patch?: string; path?: string }[];
}

/** READ_FIELDS are the kustomization fields this reading implements. */
const READ_FIELDS = new Set(["apiVersion", "kind", "resources", "components", "patches"]);

/** manifests are a YAML file's objects, in order; a document that does not parse throws. */
export function manifests(file: string): Manifest[] {
  return parseAllDocuments(readFileSync(file, "utf8")).map((d) => {
    if (d.errors.length) throw new Error(`${file}: ${d.errors.map((e) => e.message).join("; ")}`);
    return d.toJS() as Manifest;
  });
}

/** kustomizationOf reads a directory's kustomization.yaml, refusing fields this reading ignores. */
export function kustomizationOf(dir: string): Kustomization {
  const k = parse(readFileSync(join(dir, "kustomization.yaml"), "utf8")) as Kustomization;
  const unread = Object.keys(k).filter((field) => !READ_FIELDS.has(field));
  if (unread.length) throw new Error(`${dir}/kustomization.yaml: ${unread.join(", ")} not read by this test`);
  return k;
}

/** within says whether a path is a folder or lies below it. */
const within = (path: string, folder: string) => path === folder || path.startsWith(folder + sep);

/** inside is a file of a kustomization, refused (as kustomize does) when outside its folder. */
function inside(dir: string, file: string): string {
  const path = resolve(dir, file);
  if (!within(path, resolve(dir))) throw new Error(`${dir}: ${file} is not in or below the kustomization`);
  return path;
}

/**
 * kustomize is what `kustomize build dir` prints, as objects in order. `visited` are the folders
 * that included this one: one of them inside a folder it includes is a cycle, refused.
 */
export function kustomize(dir: string, visited: readonly string[] = []): Manifest[] {
  const k = kustomizationOf(dir);
  const chain = [...visited, resolve(dir)];
  if (k.kind === "Component") throw new Error(`${dir}: a Component is listed under components, not built`);
  let objects = resourcesOf(dir, k, chain);
  for (const c of k.components ?? []) {
    const path = resolve(dir, c);
    const component = kustomizationOf(path);
    if (component.kind !== "Component") throw new Error(`${dir}: component ${c} is not kind: Component`);
    objects = patched(path, component, [...objects, ...resourcesOf(path, component, [...chain, path])]);
  }
  return patched(dir, k, objects);
}

/** resourcesOf are a kustomization's resources, each object once; a folder is built in turn. */
function resourcesOf(dir: string, k: Kustomization, chain: readonly string[]): Manifest[] {
  const objects = (k.resources ?? []).flatMap((r) => {
    const path = resolve(dir, r);
    if (!statSync(path).isDirectory()) return manifests(inside(dir, r));
    const contained = chain.find((v) => within(v, path));
    if (contained) throw new Error(`${dir}: cycle: ${r} contains ${contained}, which includes it`);
    return kustomize(path, chain);
  });
  return once(dir, objects);
}

/** once refuses objects listed more than once, as kustomize does. */
function once(dir: string, objects: Manifest[]): Manifest[] {
  const ids = objects.map(
    (o) => `${o.apiVersion} ${o.kind} ${o.metadata.namespace ?? ""}/${o.metadata.name}`,
  );
  const twice = ids.filter((id, i) => ids.indexOf(id) !== i);
  if (twice.length) throw new Error(`${dir}: ${twice.join(", ")} more than once`);
  return objects;
}

/** patched applies a kustomization's patches, in order, to `given`. */
function patched(dir: string, k: Kustomization, given: Manifest[]): Manifest[] {
  let objects = once(dir, given);
  for (const [i, p] of (k.patches ?? []).entries()) {
    const text = p.patch ?? (p.path ? readFileSync(inside(dir, p.path), "utf8") : undefined);
    const ops = text === undefined ? undefined : (parse(text) as unknown);
    if (!p.target || !Array.isArray(ops))
      throw new Error(`${dir}: patch ${i} is not a JSON patch with a target (the only kind read here)`);
    const target = p.target;
    const hits = objects.filter((o) => matches(o, target));
    if (hits.length === 0) throw new Error(`${dir}: patch ${i} matches no object`);
    objects = objects.map((o) => (matches(o, target) ? applyJsonPatch(o, ops as JsonPatchOp[]) : o));
  }
  return objects;
}

/** matches says whether an object is a patch's target. */
function matches(o: Manifest, t: PatchTarget): boolean {
  const [group, version] = o.apiVersion.includes("/") ? o.apiVersion.split("/") : ["", o.apiVersion];
  return (
    o.kind === t.kind &&
    o.metadata.name === t.name &&
    (t.group === undefined || t.group === group) &&
    (t.version === undefined || t.version === version) &&
    (t.namespace === undefined || t.namespace === o.metadata.namespace)
  );
}

/**
 * applyJsonPatch applies RFC 6902 operations (add, remove, replace, test) to a copy of a
 * document; a path that is not there, or a failed test, throws as kustomize fails the build.
 */
export function applyJsonPatch<T>(doc: T, ops: readonly JsonPatchOp[]): T {
  const root = { doc: structuredClone(doc) as unknown };
  for (const op of ops) {
    const tokens = ["doc", ...pointer(op.path)];
    const key = tokens.pop() as string;
    let parent: unknown = root;
    for (const t of tokens) parent = child(parent, t, op.path);
    if (Array.isArray(parent)) {
      const at = key === "-" && op.op === "add" ? parent.length : Number(key);
      const limit = op.op === "add" ? parent.length : parent.length - 1;
      if (!/^(\d+|-)$/.test(key) || at > limit) throw new Error(`${op.op} ${op.path}: no such index`);
      if (op.op === "test") expectEqual(parent[at], op.value, op.path);
      else if (op.op === "remove") parent.splice(at, 1);
      else parent.splice(at, op.op === "replace" ? 1 : 0, op.value);
    } else if (typeof parent === "object" && parent !== null) {
      const o = parent as Record<string, unknown>;
      if (op.op !== "add" && !(key in o)) throw new Error(`${op.op} ${op.path}: not there`);
      if (op.op === "test") expectEqual(o[key], op.value, op.path);
      else if (op.op === "remove") delete o[key];
      else o[key] = op.value;
    } else throw new Error(`${op.op} ${op.path}: the parent is not an object or array`);
  }
  return root.doc as T;
}

/** pointer splits a JSON Pointer (RFC 6901) into its unescaped reference tokens. */
function pointer(path: string): string[] {
  if (path === "") return [];
  if (!path.startsWith("/")) throw new Error(`${path}: a JSON Pointer starts with /`);
  return path
    .slice(1)
    .split("/")
    .map((t) => t.replaceAll("~1", "/").replaceAll("~0", "~"));
}

/** child is a member of an object or array on the way to a patch's target; missing throws. */
function child(parent: unknown, token: string, path: string): unknown {
  const next =
    Array.isArray(parent) && /^\d+$/.test(token)
      ? parent[Number(token)]
      : typeof parent === "object" && parent !== null && !Array.isArray(parent)
        ? (parent as Record<string, unknown>)[token]
        : undefined;
  if (next === undefined) throw new Error(`${path}: ${token} is not there`);
  return next;
}

/** expectEqual is a JSON patch `test`: the value at the path must equal the patch's. */
function expectEqual(actual: unknown, expected: unknown, path: string): void {
  if (!isDeepStrictEqual(actual, expected))
    throw new Error(`test ${path}: ${JSON.stringify(actual)} is not ${JSON.stringify(expected)}`);
}
