import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { e2bError } from "../lib/e2b/answers.ts";

/** fail answers in E2B's error shape: the HTTP status as `code`, and a message. */
export const fail = (c: Context, status: number, message: string) =>
  c.json(e2bError(status, message), status as ContentfulStatusCode);
