/**
 * The public tracking endpoints (no API key): the open pixel, the click
 * redirect and RFC 8058 one-click unsubscribe. A token that does not verify is
 * a 404; nothing here ever shows message content, and a redirect only goes to
 * the URL sealed in the token.
 */
import { z } from 'zod';
import type { Context } from 'koa';
import type { AppDeps } from '../deps';
import type { ApiRouter } from '../http/api';
import { notFound } from '../http/errors';
import type { RequestState } from '../http/context';
import { MAX_TOKEN_LENGTH, trackingKey, verifyToken } from './tokens';
import { recordClick, recordOpen, unsubscribeRecipient, Visit } from './record';
import { confirmPage, donePage, maskEmail } from './pages';

/** A transparent 1×1 GIF. */
export const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

const NO_CACHE = { 'Cache-Control': 'no-store, no-cache, must-revalidate, private, max-age=0', Pragma: 'no-cache', Expires: '0' };
const PAGE_HEADERS = {
  ...NO_CACHE,
  'Content-Type': 'text/html; charset=utf-8',
  'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
};

const tokenParams = z.object({ token: z.string().min(1).max(MAX_TOKEN_LENGTH + 4).describe('Signed token from the message.') });

function visitOf(ctx: Context): Visit {
  return { userAgent: ctx.get('user-agent') || null, clientIp: (ctx.state as RequestState).clientIp };
}

export function registerTrackingRoutes(api: ApiRouter, deps: AppDeps): void {
  const key = trackingKey(deps.config.dataDir);
  const verify = (token: string, kind: 'open' | 'click' | 'unsubscribe') => {
    const payload = verifyToken(key, token, kind);
    if (!payload) throw notFound('link');
    return payload;
  };
  const logged = (what: string) => (err: unknown) => {
    deps.log.error({ err, what }, 'tracking event not recorded');
    return false;
  };

  api.add({
    method: 'get', path: '/t/o/{token}', scope: null, tag: 'Tracking', extension: true,
    summary: 'Open-tracking pixel',
    description: 'A 1×1 GIF that records message.opened. Never cached. A token that does not verify gets 404.',
    params: tokenParams,
    responses: { 200: { description: 'The pixel', contentType: 'image/gif', schema: z.string() }, 404: { description: 'Unknown or altered token' } },
    async handler({ params, ctx }) {
      const { messageId } = verify(params.token.replace(/\.gif$/, ''), 'open');
      await recordOpen(deps, messageId, visitOf(ctx)).catch(logged('open'));
      return { status: 200, body: PIXEL, headers: { ...NO_CACHE, 'Content-Type': 'image/gif' } };
    },
  });

  api.add({
    method: 'get', path: '/t/c/{token}', scope: null, tag: 'Tracking', extension: true,
    summary: 'Click-tracking redirect',
    description: 'Records message.clicked and redirects (302) to the link\'s original URL, which is sealed in the token.',
    params: tokenParams,
    responses: { 302: { description: 'Redirect to the original URL' }, 404: { description: 'Unknown or altered token' } },
    async handler({ params, ctx }) {
      const { messageId, url } = verify(params.token, 'click');
      if (!url || !/^https?:\/\//i.test(url)) throw notFound('link');
      await recordClick(deps, messageId, url, visitOf(ctx)).catch(logged('click'));
      return { status: 302, body: '', headers: { ...NO_CACHE, Location: new URL(url).href, 'Referrer-Policy': 'no-referrer' } };
    },
  });

  api.add({
    method: 'get', path: '/u/{token}', scope: null, tag: 'Tracking', extension: true,
    summary: 'Unsubscribe confirmation page',
    description: 'A small page with a button that POSTs to the same URL. Visiting it changes nothing (link scanners follow GET links).',
    params: tokenParams,
    responses: { 200: { description: 'HTML page', contentType: 'text/html', schema: z.string() }, 404: { description: 'Unknown or altered token' } },
    async handler({ params }) {
      const { messageId } = verify(params.token, 'unsubscribe');
      const row = await deps.db('messages').where({ id: messageId }).first('to_email');
      if (!row) throw notFound('link');
      return { status: 200, body: confirmPage(maskEmail(row.to_email)), headers: PAGE_HEADERS };
    },
  });

  api.add({
    method: 'post', path: '/u/{token}', scope: null, tag: 'Tracking', extension: true,
    summary: 'One-click unsubscribe (RFC 8058)',
    description: 'Adds the recipient to the account\'s suppression list with reason `unsubscribe`. The body ' +
      '(`List-Unsubscribe=One-Click` from mail providers, or the confirmation form) is not needed. ' +
      'For a sandbox message the answer is the same and the suppression list is not changed.',
    params: tokenParams,
    responses: { 200: { description: 'Unsubscribed (HTML page)', contentType: 'text/html', schema: z.string() }, 404: { description: 'Unknown or altered token' } },
    async handler({ params }) {
      const { messageId } = verify(params.token, 'unsubscribe');
      const result = await unsubscribeRecipient(deps, messageId);
      if (!result) throw notFound('link');
      return { status: 200, body: donePage(maskEmail(result.email)), headers: PAGE_HEADERS };
    },
  });
}
