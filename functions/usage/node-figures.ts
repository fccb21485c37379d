import type { V1Node } from "@kubernetes/client-node";
import type { KubeClient } from "../../lib/kube/client.ts";
import { KubeError } from "../../lib/kube/errors.ts";
import {
  parseResourceMetrics,
  RESOURCE_METRICS_ANNOTATION,
  resourceMetricsSource,
} from "../../lib/usage/resource-metrics.ts";
import type { ContainerUsage } from "../../lib/usage/sample.ts";
import { parseSummaryText } from "../../lib/usage/summary.ts";
import { withTimeout } from "../../lib/util/with-timeout.ts";

/**
 * NodeFiguresFailure says which part of a node's read failed, so each is logged once; `status`
 * is the apiserver's answer when it refused (403: this host's role lacks the sandbox-metrics
 * grant, which the sampler reports once for the whole host rather than once per node).
 */
export class NodeFiguresFailure extends Error {
  readonly kind: "node" | "annotation" | "figures" | "unparsable";
  readonly status: number | undefined;

  constructor(kind: NodeFiguresFailure["kind"], message: string, status?: number) {
    super(message);
    this.kind = kind;
    this.status = status;
    this.name = "NodeFiguresFailure";
  }
}

/** failure wraps a read's error as a NodeFiguresFailure of `kind`, keeping the apiserver's status. */
const failure = (kind: NodeFiguresFailure["kind"]) => (e: unknown) => {
  throw new NodeFiguresFailure(kind, String(e), e instanceof KubeError ? e.status : undefined);
};

/** NodeFigures is one node as a sample needs it: the Node (its allocatable) and its containers' figures. */
export interface NodeFigures {
  node: V1Node;
  figures: ContainerUsage[];
}

/**
 * readNodeFigures reads one node's figures through the apiserver's node proxy: the kubelet's
 * summary (`stats/summary`), or, for a node annotated RESOURCE_METRICS_ANNOTATION, that
 * resource-metrics text (where resourceMetricsSource allows: an annotation naming anything else
 * is refused, as the Node's own kubelet may write it). The Node is read from the apiserver's
 * watch cache (its allocatable and annotations change rarely). Each read is bounded by
 * timeoutMs; a failure is a NodeFiguresFailure naming its kind. `at` is when the figures were
 * asked for (RFC 3339).
 */
export async function readNodeFigures(
  kube: KubeClient,
  name: string,
  at: string,
  timeoutMs: number,
): Promise<NodeFigures> {
  const node = await withTimeout(kube.getNode(name, { cached: true }), timeoutMs, `node ${name}`).catch(
    failure("node"),
  );
  const annotation = node.metadata?.annotations?.[RESOURCE_METRICS_ANNOTATION];
  const source = annotation === undefined ? undefined : resourceMetricsSource(annotation);
  if (source && !source.ok) throw new NodeFiguresFailure("annotation", source.error);
  const read = (target: string, path: string, accept: string) =>
    withTimeout(kube.nodeProxy(target, path, accept), timeoutMs, `${path} of node ${target}`).catch(
      failure("figures"),
    );
  if (source?.ok) {
    const text = await read(source.proxy, source.path, "text/plain;version=0.0.4, */*;q=0.1");
    return { node, figures: parseResourceMetrics(text, at) };
  }
  const body = await read(name, "stats/summary", "application/json");
  const figures = parseSummaryText(body, at);
  if (!figures)
    throw new NodeFiguresFailure(
      "unparsable",
      `the summary of node ${name} is not JSON: ${body.slice(0, 120)}`,
    );
  return { node, figures };
}
