// The building blocks of the native API's OpenAPI document (openapi.ts), shared by its parts.
import { toJsonSchema } from "@valibot/to-json-schema";
import type { GenericSchema } from "valibot";

/** jsonSchema renders a request schema for the document (checks it cannot express are left out). */
export const jsonSchema = (schema: GenericSchema) =>
  toJsonSchema(schema, { errorMode: "ignore", target: "openapi-3.0" });

export const str = { type: "string" };
export const int = { type: "integer" };
/** map is a string → string object (images, metadata, a log line's fields). */
export const map = { type: "object", additionalProperties: str };

/** json is a JSON body of `schema`, for a request body or a response. */
export const json = (schema: unknown) => ({ content: { "application/json": { schema } } });

/** errors are the error responses of an operation, each the Error schema. */
export const errors = (...codes: number[]) =>
  Object.fromEntries(
    codes.map((c) => [String(c), { description: "error", ...json({ $ref: "#/components/schemas/Error" }) }]),
  );

/** query is an optional query parameter. */
export const query = (name: string, description: string, schema: unknown = str) => ({
  name,
  in: "query",
  required: false,
  description,
  schema,
});

/** id is a sandbox's id in the path. */
export const id = { name: "id", in: "path", required: true, schema: str };
/** sandbox refers to the Sandbox schema. */
export const sandbox = { $ref: "#/components/schemas/Sandbox" };
