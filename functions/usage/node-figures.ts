import type { V1Node } from "@kubernetes/client-node";
import type { KubeClient } from "../../lib/kube/client.ts";
import { parseResourceMetrics, RESOURCE_METRICS_ANNOTATION } from "../../lib/usage/resource-metrics.ts";
import type { ContainerUsage } from "../../lib/usage/sample.ts";
import { parseSummaryText } from "../../lib/usage/summary.ts";
import { withTimeout } from "../../lib/util/with-timeout.ts";

/** PROXY_NODE is what the proxy's node part may be: a node name, with an optional scheme and port. */
const PROXY_NODE = /^(?:https?:)?[a-z0-9]([-a-z0-9.]*[a-z0-9])?(?::\d{1,5})?$/;

/** NodeFiguresFailure says which part of a node's read failed, so each is logged once. */
export class NodeFiguresFailure extends Error {
  readonly kind: "node" | "annotation" | "figures" | "unparsable";

  constructor(kind: NodeFiguresFailure["kind"], message: string) {
    super(message);
    this.kind = kind;
    this.name = "NodeFiguresFailure";
  }
}

/** NodeFigures is one node as a sample needs it: the Node (its allocatable) and its containers' figures. */
export interface NodeFigures {
  node: V1Node;
  figures: ContainerUsage[];
}

/**
 * readNodeFigures reads one node's figures through the apiserver's node proxy: the kubelet's
 * summary (`stats/summary`), or, for a node annotated RESOURCE_METRICS_ANNOTATION, that
 * resource-metrics text. The Node is read from the apiserver's watch cache (its allocatable and
 * annotations change rarely). Each read is bounded by timeoutMs; a failure is a
 * NodeFiguresFailure naming its kind. `at` is when the figures were asked for (RFC 3339).
 */
export async function readNodeFigures(
  kube: KubeClient,
  name: string,
  at: string,
  timeoutMs: number,
): Promise<NodeFigures> {
  const node = await withTimeout(kube.getNode(name, { cached: true }), timeoutMs, `node ${name}`).catch(
    (e: unknown) => {
      throw new NodeFiguresFailure("node", String(e));
    },
  );
  const source = node.metadata?.annotations?.[RESOURCE_METRICS_ANNOTATION];
  const slash = source?.indexOf("/") ?? -1;
  const proxy = source !== undefined && slash > 0 ? source.slice(0, slash) : undefined;
  if (source !== undefined && (!proxy || !PROXY_NODE.test(proxy)))
    throw new NodeFiguresFailure(
      "annotation",
      `${RESOURCE_METRICS_ANNOTATION}: ${JSON.stringify(source)} is not <proxy node>/<path>`,
    );
  const read = (target: string, path: string, accept: string) =>
    withTimeout(kube.nodeProxy(target, path, accept), timeoutMs, `${path} of node ${target}`).catch(
      (e: unknown) => {
        throw new NodeFiguresFailure("figures", String(e));
      },
    );
  if (proxy && source) {
    const text = await read(proxy, source.slice(slash + 1), "text/plain;version=0.0.4, */*;q=0.1");
    return { node, figures: parseResourceMetrics(text, at) };
  }
  const body = await read(name, "stats/summary", "application/json");
  const figures = parseSummaryText(body, at);
  if (figures.length === 0 && !isJson(body))
    throw new NodeFiguresFailure(
      "unparsable",
      `the summary of node ${name} is not JSON: ${body.slice(0, 120)}`,
    );
  return { node, figures };
}

function isJson(body: string): boolean {
  try {
    JSON.parse(body);
    return true;
  } catch {
    return false;
  }
}
