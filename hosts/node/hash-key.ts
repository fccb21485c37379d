import { createHash } from "node:crypto";

/**
 * sha256Hex is hashApiKey's value (lowercase hex SHA-256 of the key's UTF-8 bytes) computed at
 * once: the key check runs on every request, and WebCrypto's digest is an asynchronous job on the
 * thread pool (6 % of the API thread's CPU in a burst of creates, docs/benchmarks.md).
 */
export function sha256Hex(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}
