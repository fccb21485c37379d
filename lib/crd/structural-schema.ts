// Turns a valibot schema into a Kubernetes *structural* OpenAPI v3 schema for a CRD.
//
// The valibot schemas in lib/crd are the single source of truth. @valibot/to-json-schema does
// the conversion (target openapi-3.0, errors thrown, nothing by reference), then normalise()
// walks the result and applies these rules:
//
//  1. Only keywords a structural schema allows are kept; any other keyword ($ref, allOf, oneOf,
//     not, const on a typed node, tuples, …) throws, so a schema change that the apiserver would
//     reject fails at generation time instead of at install time.
//  2. `$schema` is dropped; `additionalProperties: false` is dropped (the apiserver prunes
//     unknown fields anyway), as is `additionalProperties: {}` on preserve-unknown-fields nodes.
//  3. Every node has a `type`, except int-or-string nodes (no type) and preserve-unknown-fields
//     nodes (which keep a type when they have one). A bare enum gets its type from its values.
//  4. An int-or-string node (`x-kubernetes-int-or-string: true`) gets exactly
//     `anyOf: [{type: integer}, {type: string}]`; a pattern of the string branch moves up to the
//     node, as controller-gen emits resource.Quantity. Any other anyOf is only accepted as a
//     nullable union (anyOf [X, {type: null}] → X + `nullable: true`).
//  5. `required` lists the non-optional entries (valibot's notion, which is the seed's
//     `+required`/non-omitempty), plus the entries carrying REQUIRED_MARKER (required fields
//     that also have a default); the marker itself is removed. Empty lists are dropped.
//  6. A `x-kubernetes-list-type: map` list must have object items whose key fields are scalars
//     and required or defaulted (the apiserver rejects the CRD otherwise).
//  7. `\/` in a pattern becomes `/`: RegExp#source escapes slashes for regex literals, which
//     a JSON pattern does not need (the upstream metav1.Condition type pattern has a bare `/`).
//  8. Object keys and property names are sorted, so the output is stable and diffable.
//
// Runtime-only checks (v.check, v.rawCheck) are ignored; CEL rules travel as metadata.
import { toJsonSchema } from "@valibot/to-json-schema";
import type * as v from "valibot";
import { REQUIRED_MARKER } from "./scalars.ts";

/** SchemaType is a structural schema node type. */
export type SchemaType = "object" | "array" | "string" | "integer" | "number" | "boolean";

/** ValidationRule is one CEL rule (`x-kubernetes-validations` item). */
export interface ValidationRule {
  rule: string;
  message?: string;
  messageExpression?: string;
  reason?: string;
  fieldPath?: string;
}

/** JSONSchemaProps is the subset of the apiextensions/v1 schema that this generator emits. */
export interface JSONSchemaProps {
  type?: SchemaType;
  format?: string;
  description?: string;
  properties?: Record<string, JSONSchemaProps>;
  additionalProperties?: JSONSchemaProps;
  items?: JSONSchemaProps;
  required?: string[];
  enum?: (string | number | boolean)[];
  default?: unknown;
  nullable?: boolean;
  anyOf?: JSONSchemaProps[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minItems?: number;
  maxItems?: number;
  minProperties?: number;
  maxProperties?: number;
  "x-kubernetes-preserve-unknown-fields"?: boolean;
  "x-kubernetes-int-or-string"?: boolean;
  "x-kubernetes-embedded-resource"?: boolean;
  "x-kubernetes-list-type"?: "atomic" | "set" | "map";
  "x-kubernetes-list-map-keys"?: string[];
  "x-kubernetes-map-type"?: "atomic" | "granular";
  "x-kubernetes-validations"?: ValidationRule[];
}

type Json = Record<string, unknown>;

const SCALAR_TYPES = new Set(["string", "integer", "number", "boolean"]);
/** Keywords copied verbatim (after a type check done by the apiserver's own CRD validation). */
const PASS_THROUGH = [
  "format",
  "description",
  "default",
  "nullable",
  "minimum",
  "maximum",
  "minLength",
  "maxLength",
  "pattern",
  "minItems",
  "maxItems",
  "minProperties",
  "maxProperties",
  "x-kubernetes-preserve-unknown-fields",
  "x-kubernetes-int-or-string",
  "x-kubernetes-embedded-resource",
  "x-kubernetes-list-type",
  "x-kubernetes-list-map-keys",
  "x-kubernetes-map-type",
  "x-kubernetes-validations",
] as const;
/** Keywords handled explicitly below (or dropped). */
const HANDLED = new Set<string>([
  ...PASS_THROUGH,
  "$schema",
  "type",
  "enum",
  "const",
  "properties",
  "additionalProperties",
  "items",
  "required",
  "anyOf",
  REQUIRED_MARKER,
]);

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function fail(path: string, message: string): never {
  throw new Error(`structural schema at ${path || "<root>"}: ${message}`);
}

/**
 * toStructuralSchema converts a valibot schema into a structural OpenAPI v3 schema, applying the
 * rules in this file's header. It throws on anything the apiserver would not accept as
 * structural.
 */
export function toStructuralSchema(schema: v.GenericSchema): JSONSchemaProps {
  const raw: unknown = toJsonSchema(schema, {
    target: "openapi-3.0",
    errorMode: "throw",
    ignoreActions: ["check", "raw_check"],
  });
  if (isObject(raw) && ("$defs" in raw || "definitions" in raw)) fail("", "definitions are not allowed");
  return sortKeys(normalise(raw, "")) as JSONSchemaProps;
}

function inferEnumType(values: unknown[], path: string): SchemaType {
  if (values.every((x) => typeof x === "string")) return "string";
  if (values.every((x) => typeof x === "number" && Number.isInteger(x))) return "integer";
  if (values.every((x) => typeof x === "number")) return "number";
  if (values.every((x) => typeof x === "boolean")) return "boolean";
  return fail(path, `enum mixes value types: ${JSON.stringify(values)}`);
}

function normalise(node: unknown, path: string): JSONSchemaProps {
  if (!isObject(node)) return fail(path, "schema node is not an object");
  for (const key of Object.keys(node)) {
    if (!HANDLED.has(key)) fail(path, `keyword "${key}" is not allowed in a structural schema`);
  }
  const out: JSONSchemaProps = {};
  for (const key of PASS_THROUGH) if (node[key] !== undefined) Object.assign(out, { [key]: node[key] });

  if (node.anyOf !== undefined) normaliseAnyOf(node, out, path);
  if (typeof out.pattern === "string") out.pattern = unescapeSlashes(out.pattern);

  const type = node.type;
  if (type !== undefined) {
    if (typeof type !== "string" || (!SCALAR_TYPES.has(type) && type !== "object" && type !== "array"))
      fail(path, `type ${JSON.stringify(type)} is not a single structural type`);
    if (out.type === undefined) out.type = type as SchemaType;
  }
  const enumValues = node.enum ?? ("const" in node ? [node.const] : undefined);
  if (enumValues !== undefined) {
    if (!Array.isArray(enumValues) || enumValues.length === 0) fail(path, "enum must be a non-empty list");
    out.enum = enumValues as (string | number | boolean)[];
    out.type ??= inferEnumType(enumValues, path);
  }

  if (node.properties !== undefined) normaliseObject(node, out, path);
  else if (node.required !== undefined && Array.isArray(node.required) && node.required.length > 0)
    fail(path, "required without properties");
  normaliseAdditionalProperties(node, out, path);
  if (node.items !== undefined) {
    if (!isObject(node.items)) fail(path, "tuple items are not allowed");
    out.items = normalise(node.items, `${path}[*]`);
  }

  if (out["x-kubernetes-int-or-string"] === true) delete out.type;
  else if (out.type === undefined && out["x-kubernetes-preserve-unknown-fields"] !== true)
    fail(path, "every node needs a type (unless int-or-string or preserve-unknown-fields)");
  if (out.type === "array" && out.items === undefined) fail(path, "an array needs items");
  if (out["x-kubernetes-list-type"] === "map") checkListMap(out, path);
  return out;
}

/** unescapeSlashes turns `\/` into `/`, leaving an escaped backslash before a slash (`\\/`) alone. */
function unescapeSlashes(pattern: string): string {
  return pattern.replace(/(?<!\\)((?:\\\\)*)\\\//g, "$1/");
}

function normaliseObject(node: Json, out: JSONSchemaProps, path: string): void {
  const properties = node.properties;
  if (!isObject(properties)) fail(path, "properties must be an object");
  const required = new Set<string>(Array.isArray(node.required) ? (node.required as string[]) : []);
  const names = Object.keys(properties);
  if (names.length === 0) return;
  out.properties = {};
  for (const name of names) {
    const child = properties[name];
    if (isObject(child) && child[REQUIRED_MARKER] === true) required.add(name);
    out.properties[name] = normalise(child, path === "" ? name : `${path}.${name}`);
  }
  if (required.size > 0) out.required = [...required].sort();
}

function normaliseAdditionalProperties(node: Json, out: JSONSchemaProps, path: string): void {
  const ap = node.additionalProperties;
  if (ap === undefined || ap === false || ap === true) return;
  if (!isObject(ap)) fail(path, "additionalProperties must be a schema");
  const preserve = out["x-kubernetes-preserve-unknown-fields"] === true;
  if (preserve && Object.keys(ap).length === 0) return;
  if (out.properties !== undefined) fail(path, "properties and additionalProperties are mutually exclusive");
  out.additionalProperties = normalise(ap, `${path}[*]`);
}

function normaliseAnyOf(node: Json, out: JSONSchemaProps, path: string): void {
  const branches = node.anyOf;
  if (!Array.isArray(branches) || !branches.every(isObject)) fail(path, "anyOf must be a list of schemas");
  if (node["x-kubernetes-int-or-string"] === true) {
    const int = branches.find((b) => b.type === "integer");
    const str = branches.find((b) => b.type === "string");
    if (branches.length !== 2 || int === undefined || str === undefined)
      fail(path, "an int-or-string node must be anyOf [integer, string]");
    if (typeof str.pattern === "string") out.pattern = str.pattern;
    out.anyOf = [{ type: "integer" }, { type: "string" }];
    return;
  }
  const nonNull = branches.filter((b) => b.type !== "null");
  const only = nonNull[0];
  if (nonNull.length === 1 && branches.length === 2 && only !== undefined) {
    Object.assign(out, normalise(only, path), { nullable: true });
    return;
  }
  fail(path, "anyOf is only allowed for int-or-string or nullable values");
}

function checkListMap(out: JSONSchemaProps, path: string): void {
  const keys = out["x-kubernetes-list-map-keys"];
  const item = out.items;
  if (keys === undefined || keys.length === 0) fail(path, "a map list needs x-kubernetes-list-map-keys");
  if (item?.type !== "object" || item.properties === undefined) fail(path, "a map list needs object items");
  for (const key of keys) {
    const field = item.properties[key];
    if (field === undefined || field.type === undefined || !SCALAR_TYPES.has(field.type))
      fail(path, `list map key "${key}" must be a scalar field of the items`);
    if (!item.required?.includes(key) && field.default === undefined)
      fail(path, `list map key "${key}" must be required or defaulted`);
  }
}

/** sortKeys sorts object keys recursively (arrays keep their order) for a stable output. */
export function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (!isObject(value)) return value;
  const out: Json = {};
  for (const key of Object.keys(value).sort()) out[key] = sortKeys(value[key]);
  return out;
}
