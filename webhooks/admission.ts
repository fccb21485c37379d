import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { CatalogLookup } from "../lib/admission/instance-type-checks.ts";
import {
  type AdmissionRequest,
  type AdmissionResponseReview,
  parseAdmissionReview,
} from "../lib/admission/review.ts";
import {
  catalogToRead,
  mutateRequest,
  type TemplateLookup,
  templateToCopy,
  validateRequest,
} from "../lib/admission/validate.ts";
import type { SandboxTemplate } from "../lib/crd/sandbox-template.ts";
import type { InstanceTypeCatalog } from "../lib/env/instance-types.ts";
import type { Log } from "../lib/util/log.ts";
import { withTimeout } from "../lib/util/with-timeout.ts";
import { requireToken } from "./require-token.ts";

/** AdmissionDeps are what the admission endpoints need from their host. */
export interface AdmissionDeps {
  /** The bearer token the apiserver presents (its admission kubeconfig). */
  callbackToken: string;
  logger: Log;
  /**
   * readTemplate reads a SandboxTemplate (undefined when it does not exist) so pool creates get
   * their template copy; without it, the copy-template step makes the copy after the create.
   */
  readTemplate?: (name: string) => Promise<SandboxTemplate | undefined>;
  /**
   * instanceTypes reads the instance type catalog (undefined when its ConfigMap, `source`, does
   * not exist) for Env reviews naming a type; without it, those names are not checked.
   */
  instanceTypes?: { source: string; read: () => Promise<InstanceTypeCatalog | undefined> };
}

/**
 * TEMPLATE_READ_MS bounds the defaulting webhook's template read well inside the apiserver's
 * webhook timeout: a slow read leaves the copy to the pool's reconcile rather than failing open late.
 */
const TEMPLATE_READ_MS = 3000;

/** lookupTemplate reads the template a pool review needs, as found, missing or unreadable. */
async function lookupTemplate(
  deps: AdmissionDeps,
  req: AdmissionRequest,
): Promise<TemplateLookup | undefined> {
  const name = templateToCopy(req);
  if (name === undefined || !deps.readTemplate) return undefined;
  try {
    return {
      template: (await withTimeout(deps.readTemplate(name), TEMPLATE_READ_MS, "template read")) ?? null,
    };
  } catch (e) {
    deps.logger.warn(
      { template: name, err: String(e) },
      "admission: template not read; the pool step copies it",
    );
    return { error: e instanceof Error ? e.message : String(e) };
  }
}

/**
 * lookupCatalog reads the catalog an Env review needs (catalogToRead), within TEMPLATE_READ_MS: a
 * read that fails or is slow is an error, and the review fails closed (ADR 0003).
 */
async function lookupCatalog(deps: AdmissionDeps, req: AdmissionRequest): Promise<CatalogLookup | undefined> {
  const catalog = deps.instanceTypes;
  if (!catalog || !catalogToRead(req)) return undefined;
  try {
    return {
      source: catalog.source,
      catalog: await withTimeout(catalog.read(), TEMPLATE_READ_MS, "instance type catalog read"),
    };
  } catch (e) {
    deps.logger.warn(
      { catalog: catalog.source, err: String(e) },
      "admission: instance type catalog not read",
    );
    return { source: catalog.source, error: e instanceof Error ? e.message : String(e) };
  }
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
  const decisions: [string, (req: AdmissionRequest) => Promise<AdmissionResponseReview>][] = [
    ["/validate", async (req) => validateRequest(req, await lookupCatalog(deps, req))],
    ["/mutate", async (req) => mutateRequest(req, await lookupTemplate(deps, req))],
  ];
  for (const [path, decide] of decisions) {
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
      const response = await decide(req);
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
