import type { KubeTransport } from "../kube/transport.ts";
import type { Metrics } from "./metrics.ts";
import { inplaceDirection, phaseTarget, requestKind } from "./request-kind.ts";

/**
 * meteredTransport counts every apiserver request of `inner` by verb, resource and code (0: no
 * answer), times it, counts the preconditioned writes that lost (409, or a PATCH's 422 from a
 * failed test) by the sandbox transition they tried, and the in-place image updates that landed. It changes nothing it passes on.
 */
export function meteredTransport(inner: KubeTransport, metrics: Metrics): KubeTransport {
  return async (req) => {
    const kind = requestKind(req);
    const t0 = performance.now();
    const count = (code: number) => {
      metrics.apiserverRequests.inc({ ...kind, code: String(code) });
      metrics.apiserverDuration.observe(kind, (performance.now() - t0) / 1000);
    };
    try {
      const res = await inner(req);
      count(res.status);
      if (res.status === 409 || (res.status === 422 && kind.verb === "patch"))
        metrics.apiserverConflicts.inc({ ...kind, transition: phaseTarget(req) ?? "" });
      const direction = res.status < 300 ? inplaceDirection(req) : undefined;
      if (direction) metrics.inplaceUpdates.inc({ direction });
      return res;
    } catch (e) {
      count(0);
      throw e;
    }
  };
}
