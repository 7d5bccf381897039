/**
 * SMTP replies of both listeners. smtp-server writes `<code> <err.message>`
 * for a handler's error, so the RFC 3463 enhanced code is part of the text we
 * give it (the server's own enhanced-code table would attach 5.1.1 to every
 * 550, which is wrong for policy refusals). Service errors of the accept path
 * (ApiError) are translated here, once, so the API and SMTP refuse the same
 * things for the same reasons.
 */
import { ApiError } from '../http/errors';

/** An error smtp-server turns into the reply `<responseCode> <message>`. */
export class SmtpReply extends Error {
  readonly responseCode: number;

  constructor(code: number, enhanced: string, text: string) {
    super(`${enhanced} ${text}`);
    this.responseCode = code;
  }
}

export const smtpReply = (code: number, enhanced: string, text: string): SmtpReply => new SmtpReply(code, enhanced, text);

/** Where an accept-path field came from on the SMTP side, for readable refusals. */
const PARAM_SOURCE: Record<string, string> = {
  from: 'From header',
  ip_pool: 'X-Pigeon-IP-Pool',
  send_at: 'X-Pigeon-Send-At',
  tags: 'X-Pigeon-Tags',
  metadata: 'X-Pigeon-Metadata',
};

function sourceOf(param: string | undefined): string | undefined {
  if (!param) return undefined;
  return PARAM_SOURCE[param] ?? PARAM_SOURCE[param.replace(/[.[].*$/, '')];
}

/** The reply for a refusal of the accept path (enqueueRaw). */
export function replyForApiError(err: ApiError): SmtpReply {
  const where = sourceOf(err.param);
  const text = where ? `${where}: ${err.message}` : err.message;
  switch (err.code) {
    case 'domain_not_verified':
      return smtpReply(550, '5.7.1', `${err.message}; verify the domain (POST /v1/domains/{domain}/verify) or send with a test key`);
    case 'message_too_large':
      return smtpReply(552, '5.3.4', err.message);
    case 'too_many_recipients':
      return smtpReply(452, '4.5.3', err.message);
    case 'invalid_address':
      return err.param?.startsWith('recipients') ? smtpReply(553, '5.1.3', err.message) : smtpReply(554, '5.6.0', text);
    default:
      if (err.status >= 500) return smtpReply(451, '4.3.0', 'Local error, try again later');
      return smtpReply(554, '5.6.0', text);
  }
}

/** The final reply of an accepted transaction; kept under the 512-octet reply limit of RFC 5321. */
export function queuedReply(ids: string[], batchId: string): string {
  const head = '2.0.0 Ok: queued as';
  const max = 500 - head.length;
  let list = '';
  for (let i = 0; i < ids.length; i++) {
    const rest = ids.length - i - 1;
    const tail = rest ? ` and ${rest} more (batch ${batchId})` : '';
    if ((list + ' ' + ids[i]).length + tail.length > max) return `${head}${list} and ${ids.length - i} more (batch ${batchId})`;
    list += ' ' + ids[i];
  }
  return head + list;
}
