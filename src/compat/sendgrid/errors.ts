/**
 * Pigeon errors in SendGrid's shape: {"errors": [{"message", "field", "help"}]}
 * with SendGrid's statuses (400 for a bad request, 401 for a key, 403 for an
 * unverified sender, 413, 429, 500).
 */
import type { ApiError } from '../../http/errors';
import type { ProviderError } from '../layer';

export interface SendgridFault {
  message: string;
  field: string | null;
  help: string | null;
}

export function sendgridFault(err: { code: string; message: string; param?: string }, fieldPrefix = ''): SendgridFault {
  return { message: err.message, field: err.param ? `${fieldPrefix}${err.param}` : null, help: null };
}

export function sendgridStatus(err: { status: number; code: string }): number {
  if (err.code === 'domain_not_verified') return 403;
  if (err.status === 401 || err.status === 403 || err.status === 413 || err.status === 429 || err.status >= 500) return err.status;
  return 400;
}

export function sendgridError(err: ApiError): ProviderError {
  return { status: sendgridStatus(err), body: { errors: [sendgridFault(err)] } };
}
