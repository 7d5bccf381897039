/**
 * The session cookie's Set-Cookie lines. HttpOnly (no script reads it),
 * SameSite=Strict (no other site's page sends it), Path=/ (the console and
 * /v1), and Secure when the request came over TLS (ctx.secure, which honours
 * X-Forwarded-Proto only with http.trustProxy), when http.publicUrl is https,
 * or when console.secureCookies is set.
 * Written by hand: Koa's cookie helper refuses Secure on a plain-HTTP hop
 * behind a TLS proxy that does not say so.
 */
import type { Context } from 'koa';
import type { Config } from '../config';
import { SESSION_COOKIE } from './sessions';

function attributes(ctx: Context, config: Config): string {
  // An https publicUrl means the console is reached over TLS, even through a proxy that does not say so.
  const secure = ctx.secure || config.console.secureCookies || /^https:/i.test(config.http.publicUrl);
  return `Path=/; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}

export function setSessionCookie(ctx: Context, config: Config, token: string): void {
  ctx.append('Set-Cookie', `${SESSION_COOKIE}=${token}; ${attributes(ctx, config)}`);
}

export function clearSessionCookie(ctx: Context, config: Config): void {
  ctx.append('Set-Cookie', `${SESSION_COOKIE}=; Max-Age=0; ${attributes(ctx, config)}`);
}
