import { execFileSync } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * Pki is the set of files the local control plane authenticates with: one CA that signs the
 * apiserver's serving certificate and the Node host's webhook serving certificate (both with
 * SAN IP:127.0.0.1; the host's also covers `*.<domain>` for each sandbox domain given, for its
 * sandbox router's TLS listener), and the service-account signing key pair.
 */
export interface Pki {
  caCert: string;
  caKey: string;
  apiserverCert: string;
  apiserverKey: string;
  webhookCert: string;
  webhookKey: string;
  saKey: string;
  saPub: string;
  /** kubeletClientCert is the apiserver's client certificate toward kubelets (logs, exec, the node proxy). */
  kubeletClientCert: string;
  kubeletClientKey: string;
}

function openssl(args: string[], cwd: string): void {
  execFileSync("openssl", args, { cwd, stdio: ["ignore", "ignore", "pipe"] });
}

/** signCert creates a key and a CA-signed certificate with the given subject and extensions. */
function signCert(dir: string, name: string, subject: string, extensions: string): void {
  const ext = join(dir, `${name}.ext`);
  writeFileSync(ext, extensions);
  openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", `${name}.key`], dir);
  openssl(["req", "-new", "-key", `${name}.key`, "-subj", subject, "-out", `${name}.csr`], dir);
  openssl(
    [
      "x509",
      "-req",
      "-in",
      `${name}.csr`,
      "-CA",
      "ca.crt",
      "-CAkey",
      "ca.key",
      "-CAcreateserial",
      "-days",
      "365",
      "-sha256",
      "-extfile",
      ext,
      "-out",
      `${name}.crt`,
    ],
    dir,
  );
}

/** signServingCert creates a key and a CA-signed serving certificate for the given IPs and DNS names. */
function signServingCert(dir: string, name: string, cn: string, ips: string[], dns: string[]): void {
  const san = [...ips.map((ip) => `IP:${ip}`), ...dns.map((d) => `DNS:${d}`)].join(",");
  signCert(
    dir,
    name,
    `/CN=${cn}`,
    `basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=${san}\n`,
  );
}

/**
 * signClientCert creates a key and a CA-signed client certificate for cn in organisation org
 * (Kubernetes reads O as the group).
 */
function signClientCert(dir: string, name: string, cn: string, org: string): void {
  signCert(
    dir,
    name,
    `/O=${org}/CN=${cn}`,
    "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n",
  );
}

/**
 * createPki writes a fresh PKI into dir (idempotent: existing files are kept, so a restarted
 * cluster keeps trusting what it trusted). advertiseIp is added to the apiserver's SANs;
 * each of sandboxDomains adds the wildcard `*.<domain>` to the host's, so clients reach sandboxes
 * by name (`<port>-<id>.<domain>`) over TLS verified against this CA.
 */
export function createPki(dir: string, advertiseIp: string, sandboxDomains: readonly string[] = []): Pki {
  const pki: Pki = {
    caCert: join(dir, "ca.crt"),
    caKey: join(dir, "ca.key"),
    apiserverCert: join(dir, "apiserver.crt"),
    apiserverKey: join(dir, "apiserver.key"),
    webhookCert: join(dir, "webhook.crt"),
    webhookKey: join(dir, "webhook.key"),
    saKey: join(dir, "sa.key"),
    saPub: join(dir, "sa.pub"),
    kubeletClientCert: join(dir, "kubelet-client.crt"),
    kubeletClientKey: join(dir, "kubelet-client.key"),
  };
  if (!existsSync(pki.caCert)) {
    openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ca.key"], dir);
    openssl(
      [
        "req",
        "-x509",
        "-new",
        "-key",
        "ca.key",
        "-subj",
        "/CN=agentbox-local-ca",
        "-days",
        "3650",
        "-out",
        "ca.crt",
      ],
      dir,
    );
  }
  if (!existsSync(pki.apiserverCert)) {
    signServingCert(
      dir,
      "apiserver",
      "kube-apiserver",
      ["127.0.0.1", advertiseIp, "10.96.0.1"],
      ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"],
    );
  }
  if (!existsSync(pki.webhookCert)) {
    const sandboxes = sandboxDomains.map((d) => `*.${d}`);
    signServingCert(dir, "webhook", "agentbox-functions", ["127.0.0.1"], ["localhost", ...sandboxes]);
  }
  if (!existsSync(pki.saKey)) {
    openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "sa.key"], dir);
    openssl(["pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub"], dir);
  }
  // The real node's kubelet trusts this CA for client certificates; system:masters, because its
  // authorization is AlwaysAllow for whoever the CA vouches for (real-node/kubelet-config.ts).
  if (!existsSync(pki.kubeletClientCert))
    signClientCert(dir, "kubelet-client", "kube-apiserver-kubelet-client", "system:masters");
  return pki;
}
