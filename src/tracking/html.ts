/**
 * Rewriting one HTML body for tracking: `<a href="http(s)://…">` links become
 * click-tracking URLs and a 1×1 pixel goes before `</body>` (or at the end).
 *
 * The HTML arrives as a "binary" string (one char per byte), so any
 * ASCII-compatible charset passes through byte for byte: only the href values
 * we replace and the pixel we add change, and both are plain ASCII. The
 * caller says how to turn a raw href into text (the part's charset).
 *
 * Links left alone: anything not http(s), links already pointing at our
 * tracking paths, links whose URL mentions "unsubscribe", anchors marked
 * `data-pigeon-notrack`, unparseable URLs and URLs over 2,000 characters (as written or once normalised).
 */

export interface HtmlRewrite {
  /** Pixel URL to append, or undefined for no pixel. */
  pixelUrl?: string;
  /** Tracked replacement for a link, or undefined to leave it alone. Called only for links worth tracking. */
  trackLink?: (url: string) => string | undefined;
  /** Raw href bytes (binary string) → text, per the part's charset. */
  decode: (binary: string) => string;
  /** Links under this prefix are already ours (tracking or unsubscribe). */
  publicUrl: string;
}

const MAX_URL = 2000;
const ATTR = /([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?/g;
const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' };

export function decodeEntities(value: string): string {
  return value.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, name: string) => {
    if (name[0] === '#') {
      const code = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return ENTITIES[name.toLowerCase()] ?? whole;
  });
}

/** The normalised URL when a link should be tracked, else undefined. */
export function trackableUrl(href: string, publicUrl: string): string | undefined {
  const text = href.trim();
  if (!/^https?:\/\//i.test(text) || text.length > MAX_URL || /unsubscribe/i.test(text)) return undefined;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  // Normalising percent-encodes non-ASCII (up to 9 bytes a character): a short
  // href can grow past what a token verifies (MAX_TOKEN_LENGTH), and would 404.
  if (url.href.length > MAX_URL) return undefined;
  const base = publicUrl.replace(/\/+$/, '');
  if (url.href.startsWith(`${base}/t/`) || url.href.startsWith(`${base}/u/`)) return undefined;
  return url.href;
}

/** Index just past the `>` closing the tag that starts at `start`, honouring quoted attribute values. */
function tagEnd(html: string, start: number): number {
  let quote = '';
  for (let i = start; i < html.length; i++) {
    const c = html[i];
    if (quote) {
      if (c === quote) quote = '';
    } else if (c === '"' || c === "'") {
      quote = c;
    } else if (c === '>') {
      return i + 1;
    }
  }
  return -1;
}

function rewriteAnchor(tag: string, opts: HtmlRewrite): string {
  const attrs = tag.slice(2, tag.endsWith('/>') ? -2 : -1);
  let href: { index: number; length: number; value: string } | undefined;
  for (const m of attrs.matchAll(ATTR)) {
    const name = m[1].toLowerCase();
    if (name === 'data-pigeon-notrack') return tag;
    if (name === 'href' && !href) href = { index: m.index ?? 0, length: m[0].length, value: m[2] ?? m[3] ?? m[4] ?? '' };
  }
  if (!href || !opts.trackLink) return tag;
  const url = trackableUrl(decodeEntities(opts.decode(href.value)), opts.publicUrl);
  const tracked = url && opts.trackLink(url);
  if (!tracked) return tag;
  return `<a${attrs.slice(0, href.index)}href="${tracked}"${attrs.slice(href.index + href.length)}${tag.slice(2 + attrs.length)}`;
}

function pixelTag(src: string): string {
  return `<img src="${src}" width="1" height="1" alt="" border="0" ` +
    'style="display:block;height:1px!important;width:1px!important;border:0!important;margin:0!important;padding:0!important" />';
}

/** Rewrites links and adds the pixel; returns the new binary string. */
export function rewriteHtml(html: string, opts: HtmlRewrite): string {
  let out = html;
  if (opts.trackLink) {
    const pieces: string[] = [];
    let pos = 0;
    const anchor = /<a(?=[\s>/])/gi;
    for (let m = anchor.exec(html); m; m = anchor.exec(html)) {
      const end = tagEnd(html, m.index + 2);
      if (end < 0) break;
      pieces.push(html.slice(pos, m.index), rewriteAnchor(html.slice(m.index, end), opts));
      pos = end;
      anchor.lastIndex = end;
    }
    pieces.push(html.slice(pos));
    out = pieces.join('');
  }
  if (opts.pixelUrl) {
    const lower = out.toLowerCase();
    const at = lower.lastIndexOf('</body');
    const pixel = pixelTag(opts.pixelUrl);
    out = at >= 0 ? out.slice(0, at) + pixel + out.slice(at) : out + pixel;
  }
  return out;
}
