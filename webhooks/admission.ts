import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { parseAdmissionReview } from "../lib/admission/review.ts";
import { mutateRequest, validateRequest } from "../lib/admission/validate.ts";
import type { Log } from "../lib/log.ts";
import { requireToken } from "./require-token.ts";

/** AdmissionDeps are what the admission endpoints need from their host. */
export interface AdmissionDeps {
  /** The bearer token the apiserver presents (its admission kubeconfig). */
  callbackToken: string;
  logger: Log;
}

/**
 * MAX_REVIEW_BYTES bounds a review body: an object may be up to ~3 MiB in etcd and an UPDATE
 * review carries it twice.
 */
const MAX_REVIEW_BYTES = 7 * 1024 * 1024;

/**
 * admissionRoutes serves the validating (/validate) and mutating (/mutate) webhooks for our
 * three kinds. Every request must carry the apiserver's bearer token; a body that is not a
 * well-formed AdmissionReview v1 gets a 400 naming the offending fields, never a crash.
 */
export function admissionRoutes(deps: AdmissionDeps): Hono {
  const app = new Hono();
  app.use("*", requireToken(deps.callbackToken));
  app.use(
    "*",
    bodyLimit({
      maxSize: MAX_REVIEW_BYTES,
      onError: (c) =>
        c.json(
          {
            error: {
              code: "PayloadTooLarge",
              message: `review bodies are limited to ${MAX_REVIEW_BYTES} bytes`,
            },
          },
          413,
        ),
    }),
  );
  for (const [path, decide] of [
    ["/validate", validateRequest],
    ["/mutate", mutateRequest],
  ] as const) {
    app.post(path, async (c) => {
      let body: unknown;
      try {
        body = await c.req.json();
      } catch {
        return c.json({ error: { code: "BadRequest", message: "body is not valid JSON" } }, 400);
      }
      const review = parseAdmissionReview(body);
      if (!review.ok) {
        return c.json(
          {
            error: {
              code: "BadRequest",
              message: "body is not an admission.k8s.io/v1 AdmissionReview",
              fields: review.issues,
            },
          },
          400,
        );
      }
      const req = review.value.request;
      const response = decide(req);
      deps.logger.info(
        {
          webhook: path.slice(1),
          uid: req.uid,
          kind: req.kind.kind,
          operation: req.operation,
          object: `${req.namespace ? `${req.namespace}/` : ""}${req.name ?? ""}`,
          allowed: response.response.allowed,
          patched: response.response.patch !== undefined,
        },
        "admission review",
      );
      return c.json(response);
    });
  }
  return app;
}
