/**
 * /docs: a self-contained page that renders /v1/openapi.json with no external
 * script or stylesheet, so it works on an appliance without internet access.
 */
export const DOCS_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Pigeon API</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1d232b;background:#fafbfc}
main{max-width:980px;margin:0 auto;padding:24px}
h1{margin:0 0 4px}h2{margin-top:32px;border-bottom:1px solid #dde}
details{background:#fff;border:1px solid #e2e6ea;border-radius:6px;margin:8px 0;padding:8px 12px}
summary{cursor:pointer}code,pre{font:13px ui-monospace,monospace}pre{background:#f3f5f7;padding:8px;overflow:auto}
.m{display:inline-block;min-width:60px;font-weight:700;text-transform:uppercase}
.get{color:#0a7}.post{color:#06c}.put,.patch{color:#b70}.delete{color:#c33}
.scope{float:right;color:#667;font-size:13px}.ext{color:#a5a;font-size:12px;margin-left:6px}
</style></head><body><main><h1>Pigeon API</h1><p id="desc">Loading /v1/openapi.json…</p><div id="ops"></div></main>
<script>
const esc = (s) => String(s ?? '').replace(/[&<>"]/g, (c) => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c]));
const block = (title, obj) => obj ? '<p><b>' + title + '</b></p><pre>' + esc(JSON.stringify(obj, null, 2)) + '</pre>' : '';
fetch('/v1/openapi.json').then((r) => r.json()).then((doc) => {
  document.getElementById('desc').textContent = doc.info.description + ' Version ' + doc.info.version + '. Authenticate with Authorization: Bearer <API key>.';
  const byTag = {};
  for (const [path, ops] of Object.entries(doc.paths)) for (const [method, op] of Object.entries(ops)) (byTag[op.tags[0]] ??= []).push({ path, method, op });
  let html = '';
  for (const [tag, list] of Object.entries(byTag)) {
    html += '<h2>' + esc(tag) + '</h2>';
    for (const { path, method, op } of list) {
      html += '<details><summary><span class="m ' + method + '">' + method + '</span><code>' + esc(path) + '</code> ' + esc(op.summary)
        + (op['x-pigeon-extension'] ? '<span class="ext">extension</span>' : '')
        + '<span class="scope">' + esc(op['x-required-scope'] || 'no key') + '</span></summary>'
        + (op.description ? '<p>' + esc(op.description) + '</p>' : '')
        + block('Parameters', op.parameters && op.parameters.length ? op.parameters : null)
        + block('Request body', op.requestBody && Object.values(op.requestBody.content)[0].schema)
        + block('Responses', op.responses) + '</details>';
    }
  }
  html += '<h2>Webhook events</h2>';
  for (const [name, hook] of Object.entries(doc.webhooks || {})) {
    html += '<details><summary><code>' + esc(name) + '</code></summary>' + block('Envelope', hook.post.requestBody.content['application/json'].schema) + '</details>';
  }
  document.getElementById('ops').innerHTML = html;
}).catch((e) => { document.getElementById('desc').textContent = 'Could not load the API description: ' + e; });
</script></body></html>`;
