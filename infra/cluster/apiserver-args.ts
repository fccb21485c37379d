import { networkInterfaces } from "node:os";
import { join } from "node:path";
import type { writeCallbackConfigs } from "./configs.ts";
import type { Pki } from "./pki.ts";

/**
 * advertiseAddress picks a non-loopback IPv4 for --advertise-address: the apiserver refuses to
 * guess one on a machine without a default route, and a loopback address is not a valid
 * endpoint for the `kubernetes` service. Nothing connects to it (there is no kube-proxy); when
 * the machine has no such interface a TEST-NET-1 address stands in.
 */
export function advertiseAddress(): string {
  for (const addrs of Object.values(networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === "IPv4" && !a.internal) return a.address;
  }
  return "192.0.2.10";
}

/** ApiserverSetup is what the local kube-apiserver is started with: files and ports `up` made. */
export interface ApiserverSetup {
  /** dir is the cluster's directory: tokens.csv and the pki/ cert dir are in it. */
  dir: string;
  etcdUrl: string;
  /** port is the secure port, on 127.0.0.1. */
  port: number;
  /** advertise is the --advertise-address (advertiseAddress). */
  advertise: string;
  pki: Pki;
  /** callbacks are the admission and audit webhook configs (writeCallbackConfigs). */
  callbacks: ReturnType<typeof writeCallbackConfigs>;
}

/**
 * apiserverArgs are the local kube-apiserver's flags: loopback only, token and client-certificate
 * authentication with Node and RBAC authorization, the product's admission and audit webhooks
 * (audit batched), high in-flight limits for the benchmarks, and the kubelet client certificate
 * its node proxy, logs and exec use toward the real node.
 */
export function apiserverArgs(a: ApiserverSetup): string[] {
  return [
    `--etcd-servers=${a.etcdUrl}`,
    "--bind-address=127.0.0.1",
    `--secure-port=${a.port}`,
    `--advertise-address=${a.advertise}`,
    `--tls-cert-file=${a.pki.apiserverCert}`,
    `--tls-private-key-file=${a.pki.apiserverKey}`,
    `--client-ca-file=${a.pki.caCert}`,
    `--token-auth-file=${join(a.dir, "tokens.csv")}`,
    "--authorization-mode=Node,RBAC",
    "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
    `--service-account-key-file=${a.pki.saPub}`,
    `--service-account-signing-key-file=${a.pki.saKey}`,
    "--service-cluster-ip-range=10.96.0.0/16",
    `--admission-control-config-file=${a.callbacks.admissionConfig}`,
    `--audit-policy-file=${a.callbacks.auditPolicy}`,
    `--audit-webhook-config-file=${a.callbacks.auditKubeconfig}`,
    "--audit-webhook-mode=batch",
    // Up to 100 events per POST, sent at most 5 ms after the first (ADR 0011): a burst of writes
    // becomes a few requests instead of one HTTPS request (and often one connection) per write.
    "--audit-webhook-batch-max-size=100",
    "--audit-webhook-batch-max-wait=5ms",
    "--audit-webhook-batch-throttle-enable=false",
    "--audit-webhook-initial-backoff=1s",
    "--max-requests-inflight=2000",
    "--max-mutating-requests-inflight=1000",
    `--kubelet-client-certificate=${a.pki.kubeletClientCert}`,
    `--kubelet-client-key=${a.pki.kubeletClientKey}`,
    "--kubelet-preferred-address-types=InternalIP",
    `--cert-dir=${join(a.dir, "pki")}`,
    // PodTemplates, which nothing here uses, are served from etcd: once etcd is compacted, a watch
    // from an older version gets 410 Gone, so tests can prove what a watch-fed cache does then.
    "--watch-cache-sizes=podtemplates#0",
  ];
}
