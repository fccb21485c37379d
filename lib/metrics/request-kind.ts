import { SANDBOX_PHASE, SANDBOX_PHASE_LABEL } from "../crd/keys.ts";
import { escapePointer } from "../kube/json-patch.ts";
import type { KubeRequest } from "../kube/transport.ts";

/**
 * requestKind names an apiserver request as the apiserver's own metrics do: its verb (get, list,
 * watch, create, update, patch, delete, deletecollection) and its resource, with the subresource
 * after a slash (pods/status). A path it cannot read is resource "other", never the raw path, so
 * the label's values stay few.
 */
export function requestKind(req: Pick<KubeRequest, "method" | "path" | "query">): {
  verb: string;
  resource: string;
} {
  const segments = req.path.split("?")[0]?.split("/").filter(Boolean) ?? [];
  const rest =
    segments[0] === "api" ? segments.slice(2) : segments[0] === "apis" ? segments.slice(3) : undefined;
  const scoped = rest?.[0] === "namespaces" && rest.length >= 3 ? rest.slice(2) : rest;
  const [resource, name, subresource] = scoped ?? [];
  const named = name !== undefined;
  const verb =
    req.method === "GET"
      ? req.query?.watch
        ? "watch"
        : named
          ? "get"
          : "list"
      : (VERBS.get(req.method) ?? req.method.toLowerCase());
  return {
    verb: verb === "delete" && !named ? "deletecollection" : verb,
    resource: resource ? (subresource ? `${resource}/${subresource}` : resource) : "other",
  };
}

const VERBS = new Map([
  ["POST", "create"],
  ["PUT", "update"],
  ["PATCH", "patch"],
  ["DELETE", "delete"],
]);

const PHASE_PATH = `/metadata/labels/${escapePointer(SANDBOX_PHASE_LABEL)}`;
const IMAGE_PATH = /^\/spec\/containers\/\d+\/image$/;

/**
 * phaseTarget is the sandbox phase a pod patch moves the pod to (its phase label's new value):
 * "starting" (a claim), "running", "stopping" (a release), "idle"; undefined for any other request.
 */
export function phaseTarget(req: Pick<KubeRequest, "method" | "path" | "body">): string | undefined {
  if (req.method !== "PATCH" || !Array.isArray(req.body) || requestKind(req).resource !== "pods")
    return undefined;
  const ops = req.body as { op?: string; path?: string; value?: unknown }[];
  const value = ops.find((o) => o.op !== "test" && o.path === PHASE_PATH)?.value;
  return typeof value === "string" ? value : undefined;
}

/**
 * inplaceDirection says whether a pod patch is an in-place update (it replaces a container's
 * image) and which way: "start" when it moves the pod to starting (a claim), "stop" when to
 * stopping (a release); undefined for any other request.
 */
export function inplaceDirection(
  req: Pick<KubeRequest, "method" | "path" | "body">,
): "start" | "stop" | undefined {
  if (req.method !== "PATCH" || !Array.isArray(req.body) || requestKind(req).resource !== "pods")
    return undefined;
  const ops = req.body as { op?: string; path?: string; value?: unknown }[];
  if (!ops.some((o) => o.op === "replace" && IMAGE_PATH.test(o.path ?? ""))) return undefined;
  const phase = phaseTarget(req);
  return phase === SANDBOX_PHASE.STARTING ? "start" : phase === SANDBOX_PHASE.STOPPING ? "stop" : undefined;
}
