/**
 * Pigeon errors in Resend's shape: {"statusCode", "name", "message"}, with
 * Resend's statuses and names (a wrong key is 403 invalid_api_key, an
 * unverified domain 403 validation_error, a bad field 422 validation_error).
 */
import type { ApiError } from '../../http/errors';
import type { ProviderError } from '../layer';

const BY_CODE: Record<string, [number, string]> = {
  missing_api_key: [401, 'missing_api_key'],
  malformed_api_key: [403, 'invalid_api_key'],
  invalid_api_key: [403, 'invalid_api_key'],
  revoked_api_key: [403, 'invalid_api_key'],
  insufficient_scope: [401, 'restricted_api_key'],
  ip_not_allowed: [403, 'invalid_access'],
  domain_not_verified: [403, 'validation_error'],
  invalid_idempotency_key: [400, 'invalid_idempotency_key'],
  idempotency_key_reused: [409, 'invalid_idempotent_request'],
  idempotency_conflict: [409, 'concurrent_idempotent_requests'],
  not_found: [404, 'not_found'],
  malformed_body: [400, 'validation_error'],
};

export function resendFault(err: { status: number; code: string; message: string; param?: string }): { statusCode: number; name: string; message: string } {
  const where = err.param && !err.message.startsWith(err.param) ? ` (${err.param})` : '';
  const [statusCode, name] = BY_CODE[err.code]
    ?? (err.status === 429 ? [429, 'rate_limit_exceeded'] : err.status >= 500 ? [err.status, 'application_error'] : [err.status === 400 ? 422 : err.status, 'validation_error']);
  return { statusCode, name, message: `${err.message}${where}` };
}

export function resendError(err: ApiError): ProviderError {
  const body = resendFault(err);
  return { status: body.statusCode, body };
}
