// A claim's secrets (its env vars) must reach the pod's envd after the container starts, but the
// API that took them answers before that and keeps no state. So they travel with the claim, in the
// pod's post-start-hooks annotation, sealed (AES-256-GCM) with a key only the control plane holds:
// anyone who can read pods sees ciphertext, and the annotation goes away with the sandbox. The same
// key derives each sandbox's envd access token, so no token is ever stored. Web Crypto only, so
// both hosts (Node, Workers) run it.

/** SealKeys are the two keys derived from the control plane's sealing secret. */
export interface SealKeys {
  /** seal encrypts per-claim secrets, bound to the sandbox id. */
  seal: CryptoKey;
  /** token derives a sandbox's envd access token from its id. */
  token: CryptoKey;
}

const SEALED_PREFIX = "v1.";
const utf8 = new TextEncoder();

/** base64url encodes in chunks (spreading a large array into one call overflows the stack). */
function base64url(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000)
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

function fromBase64url(text: string): Uint8Array | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return undefined;
  try {
    const binary = atob(text.replaceAll("-", "+").replaceAll("_", "/"));
    return Uint8Array.from(binary, (ch) => ch.charCodeAt(0));
  } catch {
    return undefined; // a length no base64 text has
  }
}

/**
 * importSealKeys derives the sealing and token keys from a secret of at least 32 characters with
 * HKDF-SHA-256, each under its own label, so neither key reveals the other.
 */
export async function importSealKeys(secret: string): Promise<SealKeys> {
  if (secret.length < 32) throw new RangeError("the sealing secret must have at least 32 characters");
  const base = await crypto.subtle.importKey("raw", utf8.encode(secret), "HKDF", false, ["deriveKey"]);
  const derive = (label: string, algorithm: AesKeyGenParams | HmacKeyGenParams, usages: KeyUsage[]) =>
    crypto.subtle.deriveKey(
      { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: utf8.encode(label) },
      base,
      algorithm,
      false,
      usages,
    );
  return {
    seal: await derive("agentbox sealed hooks v1", { name: "AES-GCM", length: 256 }, ["encrypt", "decrypt"]),
    token: await derive("agentbox envd token v1", { name: "HMAC", hash: "SHA-256", length: 256 }, ["sign"]),
  };
}

/** seal encrypts text for one sandbox: "v1." + base64url(iv ‖ ciphertext), the id as associated data. */
export async function seal(keys: SealKeys, sandboxId: string, text: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv, additionalData: utf8.encode(sandboxId) },
    keys.seal,
    utf8.encode(text),
  );
  const out = new Uint8Array(iv.length + sealed.byteLength);
  out.set(iv);
  out.set(new Uint8Array(sealed), iv.length);
  return SEALED_PREFIX + base64url(out);
}

/**
 * unseal decrypts what seal wrote for the same sandbox; undefined when the text is not ours, was
 * sealed for another sandbox, was altered, or the key changed since.
 */
export async function unseal(keys: SealKeys, sandboxId: string, sealed: string): Promise<string | undefined> {
  if (!sealed.startsWith(SEALED_PREFIX)) return undefined;
  const bytes = fromBase64url(sealed.slice(SEALED_PREFIX.length));
  if (!bytes || bytes.length < 12 + 16) return undefined;
  try {
    const plain = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: bytes.slice(0, 12), additionalData: utf8.encode(sandboxId) },
      keys.seal,
      bytes.slice(12),
    );
    return new TextDecoder().decode(plain);
  } catch {
    return undefined;
  }
}

/**
 * envdAccessToken is a sandbox's envd token: HMAC-SHA-256 of its id (and, after a resume, its
 * incarnation: lib/lifecycle/incarnation.ts), base64url. Any host with the key recomputes it
 * (create, connect, the hook that hands it to envd), so none is stored.
 */
export async function envdAccessToken(keys: SealKeys, sandboxId: string, incarnation = 0): Promise<string> {
  const label = incarnation > 0 ? `envd:${sandboxId}:${incarnation}` : `envd:${sandboxId}`;
  const mac = await crypto.subtle.sign("HMAC", keys.token, utf8.encode(label));
  return base64url(new Uint8Array(mac));
}

/**
 * trafficAccessToken is a private sandbox's traffic token (E2B's `e2b-traffic-access-token`, asked
 * on every port but envd's when allowPublicTraffic is false): HMAC-SHA-256 of its id under its own
 * label, `traffic:`, so it never equals the envd token and neither reveals the other. Derived, like
 * the envd token, by whoever holds the key (the API's answers, the router), never stored.
 */
export async function trafficAccessToken(keys: SealKeys, sandboxId: string): Promise<string> {
  const mac = await crypto.subtle.sign("HMAC", keys.token, utf8.encode(`traffic:${sandboxId}`));
  return base64url(new Uint8Array(mac));
}
