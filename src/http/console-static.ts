/**
 * Serves the web console (the Vite build in dist/console) at `/` and `/assets/*`.
 * The built files are read into memory once at start: the set is small (a few
 * hundred KiB), and answering only exact names from that set means no path from
 * a request ever reaches the file system (no traversal, no stat per request).
 * Every console response carries a strict CSP; hashed assets are immutable,
 * index.html is revalidated so a new build is picked up at once.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Middleware } from 'koa';

/** No inline script or style, nothing from another origin; message previews are sandboxed srcdoc frames. */
export const CONSOLE_CSP = [
  "default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "font-src 'self'",
  "connect-src 'self'", "frame-src 'self' blob:", "object-src 'none'", "base-uri 'none'", "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml', '.png': 'image/png', '.ico': 'image/x-icon', '.json': 'application/json', '.txt': 'text/plain; charset=utf-8',
};

interface StaticFile { body: Buffer; type: string; immutable: boolean }

/** The built console next to the compiled server: dist/src/http → dist/console. */
export const DEFAULT_CONSOLE_DIR = path.resolve(__dirname, '../../console');

export function loadConsoleFiles(dir: string): Map<string, StaticFile> {
  const files = new Map<string, StaticFile>();
  if (!fs.existsSync(path.join(dir, 'index.html'))) return files;
  const walk = (sub: string) => {
    for (const entry of fs.readdirSync(path.join(dir, sub), { withFileTypes: true })) {
      const rel = sub ? `${sub}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(rel);
      else if (TYPES[path.extname(entry.name)]) {
        files.set(`/${rel}`, { body: fs.readFileSync(path.join(dir, rel)), type: TYPES[path.extname(entry.name)], immutable: rel.startsWith('assets/') });
      }
    }
  };
  walk('');
  return files;
}

/** Koa middleware answering GET/HEAD for the console's files; everything else falls through to the API. */
export function consoleStatic(dir = DEFAULT_CONSOLE_DIR): Middleware {
  const files = loadConsoleFiles(dir);
  return async (ctx, next) => {
    if ((ctx.method !== 'GET' && ctx.method !== 'HEAD') || !(ctx.path === '/' || ctx.path === '/index.html' || ctx.path.startsWith('/assets/') || ctx.path === '/favicon.svg')) return next();
    const file = files.get(ctx.path === '/' ? '/index.html' : ctx.path);
    setSecurityHeaders(ctx.set.bind(ctx));
    if (!file) {
      if (ctx.path.startsWith('/assets/')) return next(); // 404 in the API's error shape
      ctx.status = 503;
      ctx.type = 'text/plain';
      ctx.body = 'The console is not built: run `npm run build:console`.\n';
      return;
    }
    ctx.type = file.type;
    ctx.set('Cache-Control', file.immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
    ctx.body = file.body;
  };
}

function setSecurityHeaders(set: (name: string, value: string) => void): void {
  set('Content-Security-Policy', CONSOLE_CSP);
  set('X-Content-Type-Options', 'nosniff');
  set('Referrer-Policy', 'same-origin');
  set('X-Frame-Options', 'DENY');
  set('Cross-Origin-Opener-Policy', 'same-origin');
}
