// Tokens presented to the router are compared without an early exit, so the time an answer takes
// says nothing about how much of a guess was right. Plain string code, so workerd runs it too
// (node:crypto's timingSafeEqual is Node-only; hono's hashes first, asynchronously).

/**
 * constantTimeEqual tells whether two strings are equal, looking at every character of the
 * longer one whatever the inputs; only their lengths may show (tokens have a fixed length).
 */
export function constantTimeEqual(a: string, b: string): boolean {
  const length = Math.max(a.length, b.length);
  let diff = a.length ^ b.length;
  for (let i = 0; i < length; i++) diff |= (a.charCodeAt(i) | 0) ^ (b.charCodeAt(i) | 0);
  return diff === 0;
}
