/**
 * bearerMatches reports whether an Authorization header carries the expected bearer token. It
 * compares SHA-256 digests in constant time, so response timing reveals nothing about the
 * token, and uses only WebCrypto, so it runs in Node and in workerd alike.
 */
export async function bearerMatches(header: string | undefined, expected: string): Promise<boolean> {
  if (!header || !expected) return false;
  const match = /^Bearer\s+(.+)$/i.exec(header.trim());
  if (!match) return false;
  const enc = new TextEncoder();
  const [a, b] = await Promise.all([
    crypto.subtle.digest("SHA-256", enc.encode(match[1])),
    crypto.subtle.digest("SHA-256", enc.encode(expected)),
  ]);
  const x = new Uint8Array(a);
  const y = new Uint8Array(b);
  let diff = 0;
  for (let i = 0; i < x.length; i++) diff |= (x[i] ?? 0) ^ (y[i] ?? 0);
  return diff === 0;
}
