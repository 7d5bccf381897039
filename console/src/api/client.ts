/**
 * The one way the console talks to the appliance: same-origin fetch to /v1 with
 * the session cookie, the CSRF token on every mutating request, and the
 * account the admin is acting for. Errors arrive in the API's one shape and
 * are thrown as ApiFailure so screens can show `message` as is.
 */
export interface ApiErrorBody { type: string; code: string; message: string; param?: string; request_id?: string }

export class ApiFailure extends Error {
  constructor(readonly status: number, readonly error: ApiErrorBody) {
    super(error.message);
  }
}

let csrfToken = '';
let actingAccount = '';
/** 'test' shows the sandbox (X-Pigeon-Mode: test); live is the session's default and sends no header. */
let viewMode: 'live' | 'test' = 'live';
/** Called with no argument when a request answers 401: the session ended; the shell shows sign-in. */
let onSignedOut: () => void = () => {};

export function setCsrfToken(token: string): void { csrfToken = token; }
export function setActingAccount(name: string): void { actingAccount = name; }
export function getActingAccount(): string { return actingAccount; }
export function setViewMode(mode: 'live' | 'test'): void { viewMode = mode; }
export function getViewMode(): 'live' | 'test' { return viewMode; }
export function onSessionEnded(handler: () => void): void { onSignedOut = handler; }

export async function request<T = any>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (method !== 'GET' && method !== 'HEAD') headers['x-csrf-token'] = csrfToken;
  if (actingAccount) headers['x-pigeon-account'] = actingAccount;
  if (viewMode === 'test') headers['x-pigeon-mode'] = 'test';
  let payload: BodyInit | undefined;
  if (body instanceof FormData) payload = body;
  else if (body !== undefined) {
    headers['content-type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  const res = await fetch(path, { method, headers, body: payload, credentials: 'same-origin', cache: 'no-store' });
  return parse<T>(res, path);
}

async function parse<T>(res: Response, path: string): Promise<T> {
  const text = await res.text();
  let data: any;
  try {
    data = text ? JSON.parse(text) : undefined;
  } catch {
    data = undefined;
  }
  if (res.ok) return data as T;
  if (res.status === 401 && !path.startsWith('/v1/session')) onSignedOut();
  const error: ApiErrorBody = data?.error ?? { type: 'api_error', code: `http_${res.status}`, message: `The server answered ${res.status}` };
  throw new ApiFailure(res.status, error);
}

export const api = {
  get: <T = any>(path: string) => request<T>('GET', path),
  post: <T = any>(path: string, body: unknown = {}) => request<T>('POST', path, body),
  put: <T = any>(path: string, body: unknown) => request<T>('PUT', path, body),
  patch: <T = any>(path: string, body: unknown) => request<T>('PATCH', path, body),
  del: <T = any>(path: string) => request<T>('DELETE', path),
};

/** Builds a query string from the filled-in fields only. */
export function query(params: Record<string, string | number | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

/** Upload with progress: fetch cannot report upload progress, XMLHttpRequest can. */
export function upload<T = any>(path: string, form: FormData, onProgress: (fraction: number) => void): Promise<T> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', path);
    xhr.setRequestHeader('x-csrf-token', csrfToken);
    if (actingAccount) xhr.setRequestHeader('x-pigeon-account', actingAccount);
    if (viewMode === 'test') xhr.setRequestHeader('x-pigeon-mode', 'test');
    xhr.upload.onprogress = (e) => e.lengthComputable && onProgress(e.loaded / e.total);
    xhr.onerror = () => reject(new ApiFailure(0, { type: 'api_error', code: 'network_error', message: 'The upload could not reach the server' }));
    xhr.onload = () => {
      let data: any;
      try { data = JSON.parse(xhr.responseText); } catch { data = undefined; }
      if (xhr.status >= 200 && xhr.status < 300) resolve(data as T);
      else reject(new ApiFailure(xhr.status, data?.error ?? { type: 'api_error', code: `http_${xhr.status}`, message: `The server answered ${xhr.status}` }));
    };
    xhr.send(form);
  });
}
