/** The two tiny pages of the unsubscribe flow. They show only a masked address, never message content. */

const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);

/** "jane.doe@example.com" → "j***@example.com" */
export function maskEmail(email: string): string {
  const at = email.lastIndexOf('@');
  if (at < 1) return '***';
  return `${email[0]}***${email.slice(at)}`;
}

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222}
button{font-size:1rem;padding:.6rem 1.2rem;cursor:pointer}</style></head>
<body>${body}</body></html>
`;
}

export function confirmPage(maskedEmail: string): string {
  return page('Unsubscribe', `<h1>Unsubscribe</h1>
<p>Stop receiving email from this sender at <strong>${escapeHtml(maskedEmail)}</strong>?</p>
<form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click"><button type="submit">Unsubscribe</button></form>`);
}

export function donePage(maskedEmail: string): string {
  return page('Unsubscribed', `<h1>You are unsubscribed</h1>
<p><strong>${escapeHtml(maskedEmail)}</strong> will not receive email from this sender any more.</p>`);
}
