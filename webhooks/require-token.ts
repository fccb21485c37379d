import { bearerAuth } from "hono/bearer-auth";

const error = (code: string, message: string) => ({ error: { code, message } });

/**
 * requireToken admits only requests carrying `Authorization: Bearer <token>` (hono compares the
 * token in constant time), answering our JSON error shape otherwise: 401 without or with a wrong
 * token, 400 for a malformed header.
 */
export function requireToken(token: string) {
  return bearerAuth({
    token,
    noAuthenticationHeader: { message: error("Unauthorized", "a bearer token is required") },
    invalidToken: { message: error("Unauthorized", "the bearer token is not valid") },
    invalidAuthenticationHeader: {
      message: error("BadRequest", "the Authorization header is not a bearer token"),
    },
  });
}
