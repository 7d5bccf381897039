/**
 * Pigeon errors in Postmark's shape: {"ErrorCode": n, "Message": "…"} with
 * Postmark's HTTP statuses (401 for keys, 422 for requests, 429, 500), so
 * Postmark SDKs raise the error class they raise against Postmark.
 */
import type { ApiError } from '../../http/errors';
import type { ProviderError } from '../layer';

/** Postmark API error codes (postmarkapp.com/developer/api/overview#error-codes). */
export const POSTMARK_CODES = {
  badToken: 10,
  invalidRequest: 300,
  senderNotFound: 400,
  invalidJson: 402,
  jsonRequired: 409,
  tooManyBatchMessages: 410,
  templateNotFound: 1101,
  streamNotFound: 1235,
} as const;

function codeOf(err: ApiError): number {
  switch (err.code) {
    case 'domain_not_verified': return POSTMARK_CODES.senderNotFound;
    case 'template_not_found': return POSTMARK_CODES.templateNotFound;
    case 'unknown_ip_pool': return POSTMARK_CODES.streamNotFound;
    case 'malformed_body': return POSTMARK_CODES.invalidJson;
    case 'unsupported_media_type': return POSTMARK_CODES.jsonRequired;
    case 'too_many_batch_messages': return POSTMARK_CODES.tooManyBatchMessages;
    default: return POSTMARK_CODES.invalidRequest;
  }
}

/** The ErrorCode and Message of one error (also a failed batch item's). */
export function postmarkFault(err: { status: number; code: string; message: string; param?: string }): { ErrorCode: number; Message: string } {
  const where = err.param && !err.message.startsWith(err.param) ? ` (${err.param})` : '';
  if (err.status === 401 || err.status === 403) return { ErrorCode: POSTMARK_CODES.badToken, Message: `${err.message}; send a Pigeon API key in X-Postmark-Server-Token` };
  return { ErrorCode: err.status >= 500 || err.status === 429 ? 0 : codeOf(err as ApiError), Message: `${err.message}${where}` };
}

export function postmarkError(err: ApiError): ProviderError {
  // Postmark answers a refused token or scope with 401 and every invalid request with 422.
  const status = err.status === 401 || err.status === 403 ? 401 : err.status === 429 || err.status >= 500 ? err.status : 422;
  return { status, body: postmarkFault(err) };
}
