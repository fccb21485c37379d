// The core/v1 types the agents.navix.sh kinds embed: resource requirements, probes and the port
// protocol. They mirror the upstream schemas controller-gen emits for these types, so a value
// the Go API accepts is accepted here. Re-exported from
// common.ts.
import * as v from "valibot";
import { atomicList, Int32, Int64, listMap } from "./scalars.ts";

/** Protocol is a corev1.Protocol, the network protocol of a port. */
export const Protocol = v.picklist(["TCP", "UDP", "SCTP"]);
export type Protocol = v.InferOutput<typeof Protocol>;

/** INT_OR_STRING marks a value that is an integer or a string (`x-kubernetes-int-or-string`). */
const INT_OR_STRING = { "x-kubernetes-int-or-string": true } as const;

/** IntOrString is an intstr.IntOrString, e.g. a port number or a named port. */
export const IntOrString = v.pipe(
  v.union([v.pipe(v.number(), v.integer()), v.string()]),
  v.metadata(INT_OR_STRING),
);
export type IntOrString = v.InferOutput<typeof IntOrString>;

/** QUANTITY_PATTERN is the resource.Quantity syntax controller-gen emits (e.g. 500m, 2Gi, 1e3). */
const QUANTITY_PATTERN =
  /^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$/;

/** Quantity is a resource.Quantity: a number or a string such as `500m`, `2Gi` or `1.5`. */
export const Quantity = v.pipe(
  v.union([
    v.pipe(v.number(), v.integer()),
    v.pipe(v.string(), v.regex(QUANTITY_PATTERN, "Invalid quantity: expected e.g. 500m, 2Gi or 1.5")),
  ]),
  v.metadata(INT_OR_STRING),
);
export type Quantity = v.InferOutput<typeof Quantity>;

/** ResourceList maps a resource name (cpu, memory, …) to a quantity. */
const ResourceList = v.record(v.string(), Quantity);

/** ResourceClaim names one DRA resource claim a container uses. */
const ResourceClaim = v.object({
  name: v.pipe(v.string(), v.description("Name of an entry in pod.spec.resourceClaims.")),
  request: v.optional(v.pipe(v.string(), v.description("Name of the request within that claim."))),
});

/** ResourceRequirements is a corev1.ResourceRequirements: requests, limits and DRA claims. */
export const ResourceRequirements = v.object({
  claims: v.optional(v.pipe(listMap(ResourceClaim, "name"), v.description("Dynamic resource claims used."))),
  limits: v.optional(v.pipe(ResourceList, v.description("Maximum amount of compute resources allowed."))),
  requests: v.optional(v.pipe(ResourceList, v.description("Minimum amount of compute resources required."))),
});
export type ResourceRequirements = v.InferOutput<typeof ResourceRequirements>;

const ExecAction = v.object({
  command: v.optional(
    v.pipe(atomicList(v.string()), v.description("Command line to run inside the container.")),
  ),
});

const HTTPHeader = v.object({
  name: v.pipe(v.string(), v.description("Header field name.")),
  value: v.pipe(v.string(), v.description("Header field value.")),
});

const HTTPGetAction = v.object({
  host: v.optional(v.pipe(v.string(), v.description("Host name to connect to; defaults to the Pod IP."))),
  httpHeaders: v.optional(v.pipe(atomicList(HTTPHeader), v.description("Custom request headers."))),
  path: v.optional(v.pipe(v.string(), v.description("Path to access on the HTTP server."))),
  port: v.pipe(IntOrString, v.description("Port number or name to access.")),
  scheme: v.optional(v.pipe(v.string(), v.description("Scheme to use, HTTP or HTTPS."))),
});

const TCPSocketAction = v.object({
  host: v.optional(v.pipe(v.string(), v.description("Host name to connect to; defaults to the Pod IP."))),
  port: v.pipe(IntOrString, v.description("Port number or name to connect to.")),
});

const GRPCAction = v.object({
  port: v.pipe(Int32, v.description("Port number of the gRPC service.")),
  service: v.optional(v.pipe(v.string(), v.description("Service name for the gRPC health check."))),
});

/** Probe is a corev1.Probe: how and how often to check a container. */
export const Probe = v.object({
  exec: v.optional(v.pipe(ExecAction, v.description("Runs a command in the container."))),
  failureThreshold: v.optional(v.pipe(Int32, v.description("Consecutive failures to count as failed."))),
  grpc: v.optional(v.pipe(GRPCAction, v.description("Calls the gRPC health-checking protocol."))),
  httpGet: v.optional(v.pipe(HTTPGetAction, v.description("Performs an HTTP GET."))),
  initialDelaySeconds: v.optional(v.pipe(Int32, v.description("Seconds after start before probing."))),
  periodSeconds: v.optional(v.pipe(Int32, v.description("How often, in seconds, to probe."))),
  successThreshold: v.optional(v.pipe(Int32, v.description("Consecutive successes to count as succeeded."))),
  tcpSocket: v.optional(v.pipe(TCPSocketAction, v.description("Opens a TCP connection."))),
  terminationGracePeriodSeconds: v.optional(
    v.pipe(Int64, v.description("Grace period, in seconds, when the probe fails and the Pod is killed.")),
  ),
  timeoutSeconds: v.optional(v.pipe(Int32, v.description("Seconds after which the probe times out."))),
});
export type Probe = v.InferOutput<typeof Probe>;
