// The OCI distribution API, as much of it as a snapshot needs: read a base image's manifest and
// config, upload a layer and a config, mount the base layers from the base repository (the
// registry links them, no bytes move), put the manifest by tag, list a repository's tags, delete
// a manifest by digest.
// Registry names in image references (`registry.agentbox.test`) are not where the registry
// listens; `endpoints` maps them to base URLs (the local cluster: `http://127.0.0.1:<port>`).
// No auth: the agent's registry is reached on a private address (ADR 0045).
import { DOCKER_MEDIA, OCI_MEDIA } from "../../lib/snapshots/image-build.ts";
import { sha256Hex } from "../../lib/util/sha256.ts";
import { DeletesDisabled } from "./committer.ts";

/** MANIFEST_ACCEPT is every manifest type a base image may come as (OCI and Docker v2, images and indexes). */
const MANIFEST_ACCEPT = [
  OCI_MEDIA.manifest,
  OCI_MEDIA.index,
  DOCKER_MEDIA.manifest,
  DOCKER_MEDIA.manifestList,
].join(", ");

/** RegistryClientOptions configure a RegistryClient. */
export interface RegistryClientOptions {
  /** endpoints maps a registry name to its base URL; other names are reached at `https://<name>`. */
  endpoints: Record<string, string>;
  /** timeoutMs bounds one metadata call (manifests, configs, mounts); default 30 s. */
  timeoutMs?: number;
  /** blobTimeoutMs bounds one blob transfer (a layer of up to gigabytes); default 10 min. */
  blobTimeoutMs?: number;
  /** fetch is the HTTP client (default: the global fetch). */
  fetch?: typeof fetch;
}

/** Manifest is a manifest as the registry holds it: its bytes (as text), media type and digest. */
export interface Manifest {
  json: string;
  mediaType: string;
  digest: string;
}

/** TAG_PAGES bounds how many pages of a tags list are followed (a loop of Links is an error, not a hang). */
const TAG_PAGES = 100;

/** BlobBody is a blob to upload: bytes, or a function opening a stream of them (called once). */
export type BlobBody = Uint8Array | (() => AsyncIterable<Uint8Array>);

type Op = "pulling from" | "pushing to" | "deleting from";

/** causeOf is the most specific message of a fetch failure (`connect ECONNREFUSED 127.0.0.1:5000`). */
function causeOf(e: unknown): string {
  let err = e as { message?: string; cause?: unknown } | undefined;
  while (err?.cause && typeof err.cause === "object") err = err.cause as typeof err;
  return err?.message ?? String(e);
}

/**
 * RegistryClient calls one or more registries' distribution API. Every call has a timeout and
 * the caller's signal; every error names the registry, what was being done, and the status or
 * the network error.
 */
export class RegistryClient {
  readonly #endpoints: Record<string, string>;
  readonly #timeoutMs: number;
  readonly #blobTimeoutMs: number;
  readonly #fetch: typeof fetch;

  constructor(o: RegistryClientOptions) {
    this.#endpoints = o.endpoints;
    this.#timeoutMs = o.timeoutMs ?? 30_000;
    this.#blobTimeoutMs = o.blobTimeoutMs ?? 600_000;
    this.#fetch = o.fetch ?? fetch;
  }

  /** baseUrl is where a registry name is reached (no trailing slash). */
  baseUrl(registry: string): string {
    return (this.#endpoints[registry] ?? `https://${registry}`).replace(/\/+$/, "");
  }

  /** getManifest reads a manifest by tag or digest; 404 is an error naming the image. */
  async getManifest(registry: string, repository: string, reference: string, signal: AbortSignal) {
    const res = await this.#manifest("GET", registry, repository, reference, signal, [200]);
    const json = await res.text();
    const digest = res.headers.get("docker-content-digest") ?? (reference.includes(":") ? reference : "");
    const mediaType = res.headers.get("content-type")?.split(";")[0]?.trim() ?? "";
    return { json, mediaType, digest } satisfies Manifest;
  }

  /**
   * manifestDigest is the digest a tag or digest resolves to (HEAD's Docker-Content-Digest; a
   * registry that sends none has the manifest read and hashed), or undefined when there is no
   * such manifest.
   */
  async manifestDigest(registry: string, repository: string, reference: string, signal: AbortSignal) {
    const head = await this.#manifest("HEAD", registry, repository, reference, signal, [200, 404]);
    if (head.status === 404) return undefined;
    const digest = head.headers.get("docker-content-digest");
    if (digest) return digest;
    const got = await this.#manifest("GET", registry, repository, reference, signal, [200, 404]);
    if (got.status === 404) return undefined;
    return `sha256:${sha256Hex(await got.text())}`;
  }

  /** #manifest sends one manifest request (any type a base image may come as), answering on `ok`. */
  #manifest(
    method: "GET" | "HEAD",
    registry: string,
    repository: string,
    reference: string,
    signal: AbortSignal,
    ok: number[],
  ): Promise<Response> {
    return this.#call("pulling from", registry, method, `/v2/${repository}/manifests/${reference}`, {
      signal,
      headers: { accept: MANIFEST_ACCEPT },
      ok,
    });
  }

  /** getBlobText reads a small blob (a config) as text. */
  async getBlobText(registry: string, repository: string, digest: string, signal: AbortSignal) {
    const res = await this.#call("pulling from", registry, "GET", `/v2/${repository}/blobs/${digest}`, {
      signal,
      ok: [200],
    });
    return res.text();
  }

  /** openBlob streams a blob (a base layer copied between registries or repositories). */
  async openBlob(registry: string, repository: string, digest: string, signal: AbortSignal) {
    const res = await this.#call("pulling from", registry, "GET", `/v2/${repository}/blobs/${digest}`, {
      signal,
      ok: [200],
      blob: true,
    });
    const body = res.body;
    if (!body)
      throw new Error(`pulling from ${registry}: blob ${digest} of ${repository} came without a body`);
    return body as AsyncIterable<Uint8Array>;
  }

  /** hasBlob tells whether the repository already holds (or links) a blob. */
  async hasBlob(registry: string, repository: string, digest: string, signal: AbortSignal) {
    const res = await this.#call("pulling from", registry, "HEAD", `/v2/${repository}/blobs/${digest}`, {
      signal,
      ok: [200, 404],
    });
    return res.status === 200;
  }

  /**
   * uploadBlob uploads a blob in one request (POST a session, PUT it with `?digest=`); the
   * registry checks the digest. `location` continues a session a refused mount opened.
   */
  async uploadBlob(
    registry: string,
    repository: string,
    digest: string,
    size: number,
    body: BlobBody,
    signal: AbortSignal,
    location?: string,
  ): Promise<void> {
    const session = location ?? (await this.#startUpload(registry, repository, "", signal));
    const url = new URL(session, `${this.baseUrl(registry)}/`);
    url.searchParams.set("digest", digest);
    await this.#call("pushing to", registry, "PUT", url.toString(), {
      signal,
      headers: { "content-type": "application/octet-stream", "content-length": String(size) },
      body: (body instanceof Uint8Array ? body : body()) as unknown as BodyInit,
      ok: [201],
      blob: true,
    });
  }

  /**
   * mountBlob asks the registry to link a blob of `from` into `repository`. True when it did;
   * false with the upload session it opened instead (a registry may answer 202 without mounting:
   * the blob is not in `from`, or it does not mount), which uploadBlob continues.
   */
  async mountBlob(
    registry: string,
    repository: string,
    digest: string,
    from: string,
    signal: AbortSignal,
  ): Promise<{ mounted: true } | { mounted: false; location: string }> {
    const query = `?mount=${encodeURIComponent(digest)}&from=${encodeURIComponent(from)}`;
    const res = await this.#call("pushing to", registry, "POST", `/v2/${repository}/blobs/uploads/${query}`, {
      signal,
      headers: { "content-length": "0" },
      ok: [201, 202],
    });
    if (res.status === 201) return { mounted: true };
    return { mounted: false, location: this.#location(registry, res) };
  }

  /** putManifest stores a manifest under a tag and answers its digest (as the registry computed it). */
  async putManifest(
    registry: string,
    repository: string,
    tag: string,
    json: string,
    mediaType: string,
    signal: AbortSignal,
  ): Promise<string> {
    const res = await this.#call("pushing to", registry, "PUT", `/v2/${repository}/manifests/${tag}`, {
      signal,
      headers: { "content-type": mediaType },
      body: json,
      ok: [201],
    });
    return res.headers.get("docker-content-digest") ?? "";
  }

  /**
   * deleteManifest deletes a manifest by digest; false when it was already gone (404). A registry
   * that allows no deletes (405) throws DeletesDisabled.
   */
  async deleteManifest(registry: string, repository: string, digest: string, signal: AbortSignal) {
    const path = `/v2/${repository}/manifests/${digest}`;
    const res = await this.#call("deleting from", registry, "DELETE", path, {
      signal,
      ok: [202, 200, 404, 405],
    });
    if (res.status === 405) throw new DeletesDisabled(registry);
    return res.status !== 404;
  }

  /**
   * listTags answers a repository's tags (the distribution tags list API, following its Link
   * pages); a repository the registry does not know (404) has none.
   */
  async listTags(registry: string, repository: string, signal: AbortSignal): Promise<string[]> {
    const tags: string[] = [];
    let next: string | undefined = `/v2/${repository}/tags/list`;
    for (let page = 0; next !== undefined; page++) {
      if (page === TAG_PAGES)
        throw new Error(`pulling from ${registry}: the tags of ${repository} run past ${TAG_PAGES} pages`);
      const res = await this.#call("pulling from", registry, "GET", next, { signal, ok: [200, 404] });
      if (res.status === 404) return tags;
      const text = await res.text();
      let body: { tags?: unknown };
      try {
        body = JSON.parse(text) as { tags?: unknown };
      } catch {
        throw new Error(
          `pulling from ${registry}: the tags list of ${repository} is not JSON: ${text.slice(0, 200)}`,
        );
      }
      if (Array.isArray(body.tags)) tags.push(...body.tags.filter((t): t is string => typeof t === "string"));
      const link = /<([^>]+)>\s*;\s*rel="?next"?/.exec(res.headers.get("link") ?? "")?.[1];
      next = link === undefined ? undefined : new URL(link, `${this.baseUrl(registry)}/`).toString();
    }
    return tags;
  }

  /** #startUpload opens an upload session and answers its URL. */
  async #startUpload(registry: string, repository: string, query: string, signal: AbortSignal) {
    const res = await this.#call("pushing to", registry, "POST", `/v2/${repository}/blobs/uploads/${query}`, {
      signal,
      headers: { "content-length": "0" },
      ok: [202],
    });
    return this.#location(registry, res);
  }

  #location(registry: string, res: Response): string {
    const location = res.headers.get("location");
    if (!location) throw new Error(`pushing to ${registry}: the upload answer ${res.status} has no Location`);
    return new URL(location, `${this.baseUrl(registry)}/`).toString();
  }

  /**
   * #call sends one request (path relative to the registry's base URL, or an absolute URL),
   * bounded by the timeout and the caller's signal, and answers the response when its status is
   * one of `ok` (the body of any other is read into the error, and of a HEAD or bodiless answer
   * discarded).
   */
  async #call(
    op: Op,
    registry: string,
    method: string,
    pathOrUrl: string,
    o: {
      signal: AbortSignal;
      headers?: Record<string, string>;
      body?: BodyInit;
      ok: number[];
      blob?: boolean;
    },
  ): Promise<Response> {
    const url = /^https?:\/\//.test(pathOrUrl) ? pathOrUrl : `${this.baseUrl(registry)}${pathOrUrl}`;
    const where = new URL(url).pathname;
    const timeoutMs = o.blob ? this.#blobTimeoutMs : this.#timeoutMs;
    const timeout = AbortSignal.timeout(timeoutMs);
    let res: Response;
    try {
      res = await this.#fetch(url, {
        method,
        headers: o.headers,
        body: o.body,
        signal: AbortSignal.any([o.signal, timeout]),
        redirect: "follow",
        ...(o.body && typeof o.body === "object" && !(o.body instanceof Uint8Array)
          ? { duplex: "half" }
          : {}),
      } as RequestInit);
    } catch (e) {
      if (o.signal.aborted) throw new Error(`${op} ${registry}: ${method} ${where} aborted`);
      if (timeout.aborted)
        throw new Error(`${op} ${registry}: ${method} ${where}: no answer within ${timeoutMs} ms`);
      throw new Error(`${op} ${registry}: ${causeOf(e)}`);
    }
    if (o.ok.includes(res.status)) {
      if (method === "HEAD" || method === "DELETE" || res.status !== 200) await res.body?.cancel();
      return res;
    }
    const text = method === "HEAD" ? "" : (await res.text().catch(() => "")).trim().slice(0, 500);
    throw new Error(`${op} ${registry}: ${method} ${where} answered ${res.status}${text ? `: ${text}` : ""}`);
  }
}
