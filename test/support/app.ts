/**
 * Test harness for the appliance itself: createApp on port 0 with a fresh
 * temporary dataDir, a captured log, and a small JSON client with the
 * bootstrap sandbox key. Every test gets its own app and database.
 *
 * With PIGEON_TEST_DATABASE=postgres the same apps run on PostgreSQL
 * (support/postgres.ts): a database per dataDir on the run's server.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { App, AppOptions, createApp } from '../../src/app';
import type { ConfigInput } from '../../src/config';
import { mergeDeep } from './merge';
import { databaseFor, testPostgresAdminUrl } from './postgres';
import { findAccountByName } from '../../src/auth/accounts';
import { loadOrCreateMasterKey, MASTER_KEY_FILE } from '../../src/crypto/secret-box';
import { createKey as createKeyInDb } from '../../src/auth/keys';
import { SCOPES, type Scope } from '../../src/auth/scopes';

export interface TestApp extends App {
  key: string;
  logs: string[];
  dataDir: string;
  api: ApiClient;
  /** Stops the app and removes its dataDir. */
  stop(): Promise<void>;
}

export function testConfig(dataDir: string, overrides: ConfigInput = {}): ConfigInput {
  const base: ConfigInput = {
    dataDir,
    log: { level: 'info' },
    http: { port: 0, publicUrl: 'http://127.0.0.1:0', shutdownTimeoutMs: 2000 },
    smtp: { submission: { port: 0, allowInsecureAuth: true }, inbound: { port: 0 } },
    webhooks: { allowPrivateTargets: true, allowHttp: true },
    delivery: { allowPrivateTargets: true },
    metrics: { port: 0 },
    rateLimit: { requestsPerSecond: 10_000, burst: 10_000 },
  };
  const hasDatabaseUrl = Boolean((overrides.database as { url?: string } | undefined)?.url);
  return mergeDeep(mergeDeep(base, testDatabase(dataDir, hasDatabaseUrl)), overrides) as ConfigInput;
}

/** True when this test run puts its apps on PostgreSQL. */
export const onPostgres = process.env.PIGEON_TEST_DATABASE === 'postgres';

/**
 * The database part of a test config: nothing on SQLite (the file in dataDir); the dataDir's database on
 * PostgreSQL, unless the overrides name one (a second node on a first node's database).
 */
function testDatabase(dataDir: string, hasDatabaseUrl: boolean): ConfigInput {
  if (!onPostgres || hasDatabaseUrl) return {};
  const adminUrl = process.env.PIGEON_TEST_POSTGRES_URL;
  if (!adminUrl) throw new Error('PostgreSQL test run: call startTestApp (or await testPostgresAdminUrl()) before testConfig');
  return { database: { client: 'postgres', url: databaseFor(adminUrl, dataDir) } };
}

export interface TestAppOptions extends AppOptions {
  /**
   * PostgreSQL only: a second node on this app's database (several nodes, one database). It gets its own
   * dataDir with a copy of the first one's secret.key (every node needs the same), and the first one's key.
   */
  sameDatabaseAs?: TestApp;
}

export async function startTestApp(overrides: ConfigInput = {}, options: TestAppOptions = {}): Promise<TestApp> {
  if (onPostgres) await testPostgresAdminUrl();
  const { sameDatabaseAs: first, ...appOptions } = options;
  if (first && !onPostgres) throw new Error('sameDatabaseAs needs PIGEON_TEST_DATABASE=postgres');
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-test-'));
  if (first) {
    loadOrCreateMasterKey(first.dataDir);
    fs.copyFileSync(path.join(first.dataDir, MASTER_KEY_FILE), path.join(dataDir, MASTER_KEY_FILE));
    overrides = mergeDeep({ database: { client: 'postgres', url: first.config.database.url } }, overrides) as ConfigInput;
  }
  const logs: string[] = [];
  const logStream = new Writable({
    write(chunk, _enc, cb) {
      logs.push(...String(chunk).split('\n').filter(Boolean));
      cb();
    },
  });
  const app = await createApp(testConfig(dataDir, overrides), { logStream, ...appOptions });
  const key = app.bootstrapKey ?? first?.key;
  if (!key) throw new Error('expected a bootstrap key on a fresh database');
  const api = new ApiClient(app.http.url, key);
  return Object.assign(app, {
    key,
    logs,
    dataDir,
    api,
    async stop() {
      await app.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  });
}

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export class ApiClient {
  constructor(
    readonly baseUrl: string,
    readonly key: string,
  ) {}

  withKey(key: string): ApiClient {
    return new ApiClient(this.baseUrl, key);
  }

  async request<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiResponse<T>> {
    const init: RequestInit = { method, headers: { ...(this.key ? { authorization: `Bearer ${this.key}` } : {}), ...headers } };
    if (body !== undefined) {
      init.body = typeof body === 'string' || body instanceof FormData ? (body as RequestInit['body']) : JSON.stringify(body);
      if (!(body instanceof FormData)) (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
    }
    const res = await fetch(this.baseUrl + path, init);
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON: keep text */
    }
    return { status: res.status, headers: res.headers, body: parsed as T, text };
  }

  get<T = any>(path: string, headers?: Record<string, string>) {
    return this.request<T>('GET', path, undefined, headers);
  }
  post<T = any>(path: string, body?: unknown, headers?: Record<string, string>) {
    return this.request<T>('POST', path, body ?? {}, headers);
  }
  put<T = any>(path: string, body?: unknown, headers?: Record<string, string>) {
    return this.request<T>('PUT', path, body ?? {}, headers);
  }
  patch<T = any>(path: string, body?: unknown, headers?: Record<string, string>) {
    return this.request<T>('PATCH', path, body ?? {}, headers);
  }
  delete<T = any>(path: string, headers?: Record<string, string>) {
    return this.request<T>('DELETE', path, undefined, headers);
  }
}

/**
 * Creates a key for the default account, as the sysadmin's CLI does (a sandbox key cannot mint live keys
 * through the API), and returns its secret.
 */
export async function createKey(app: TestApp, mode: 'test' | 'live', scopes: string[]): Promise<string> {
  const account = await findAccountByName(app.db, 'default');
  if (!account) throw new Error('no default account');
  const { secret } = await createKeyInDb(app.db, { accountId: account.id, name: `${mode} key (${scopes.length} scopes)`, mode, scopes: scopes as Scope[] }, app.deps.clock.now());
  return secret;
}

/**
 * A client with a new live key (every scope unless told): what changes live mail (key management, security
 * settings, suppression writes, domain delete, live webhooks) needs one, and `app.api` holds the sandbox key.
 */
export async function liveApi(app: TestApp, scopes: readonly string[] = SCOPES): Promise<ApiClient> {
  return app.api.withKey(await createKey(app, 'live', [...scopes]));
}

/** The Prometheus text from the app's own metrics listener (not the API port). */
export async function scrapeMetrics(app: App, token?: string): Promise<string> {
  if (!app.metrics) throw new Error('metrics.enabled is false for this app');
  const res = await fetch(app.metrics.url, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  if (res.status !== 200) throw new Error(`metrics scrape answered ${res.status}`);
  return res.text();
}
