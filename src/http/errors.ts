/**
 * The one error shape of the API:
 *   {"error": {"type", "code", "message", "param"?, "details"?, "request_id"}}
 * Services throw ApiError for expected faults; anything else becomes a 500
 * with a generic message (the cause goes to the log, never to the client).
 */
import type { z } from 'zod';

export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'conflict_error'
  | 'rate_limit_error'
  | 'api_error';

export interface ErrorDetail {
  param: string;
  message: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly type: ErrorType,
    readonly code: string,
    message: string,
    readonly param?: string,
    readonly details?: ErrorDetail[],
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }
}

export const badRequest = (code: string, message: string, param?: string) =>
  new ApiError(400, 'invalid_request_error', code, message, param);
export const notFound = (what: string, param?: string) =>
  new ApiError(404, 'not_found_error', 'not_found', `${what} not found`, param);
export const conflict = (code: string, message: string, param?: string) =>
  new ApiError(409, 'conflict_error', code, message, param);
export const unprocessable = (code: string, message: string, param?: string, details?: ErrorDetail[]) =>
  new ApiError(422, 'invalid_request_error', code, message, param, details);
export const tooLarge = (message: string, param?: string) =>
  new ApiError(413, 'invalid_request_error', 'payload_too_large', message, param);

/** `['to', 3, 'email']` → `to[3].email` */
export function paramPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out ? `.${String(part)}` : String(part);
  }
  return out;
}

/** A zod failure as one error listing every fault; the first names `param`. */
export function fromZodError(error: z.ZodError, status: 400 | 422, prefix: PropertyKey[] = []): ApiError {
  const details: ErrorDetail[] = [];
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        details.push({ param: paramPath([...prefix, ...issue.path, key]), message: `unknown field '${key}'` });
      }
    } else {
      details.push({ param: paramPath([...prefix, ...issue.path]), message: issue.message });
    }
  }
  const first = details[0] ?? { param: '', message: 'invalid request' };
  const code = status === 400 ? 'invalid_parameter' : 'validation_failed';
  const where = first.param ? `${first.param}: ` : '';
  return new ApiError(status, 'invalid_request_error', code, `${where}${first.message}`, first.param || undefined, details);
}
