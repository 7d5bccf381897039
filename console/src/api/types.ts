/** The shapes the console reads; fields named as the API returns them (see docs/). */
export interface Page<T> { data: T[]; pagination: { has_more: boolean; next_cursor: string | null; total: number } }

export interface Address { email: string; name: string | null }
export interface Message {
  id: string; status: string; mode: string; sandbox: boolean; from: Address; to: Address & { type: string };
  subject: string | null; tags: string[]; attempt_count: number; last_response: string | null;
  created_at: string; send_at: string | null; sent_at: string | null; delivered_at: string | null; bounced_at: string | null;
}
export interface Attempt {
  attempted_at: string; mx_host: string | null; source_ip: string | null; tls: boolean; smtp_code: number | null;
  enhanced_code: string | null; response: string | null; outcome: string; duration_ms: number | null; transcript?: string | null;
}
export interface MessageEvent { id: string; type: string; created_at: string; data: Record<string, unknown> }
export interface MessageDetail extends Message { attempts: Attempt[]; events: MessageEvent[] }
export interface MessageContent {
  subject: string | null; html: string | null; text: string | null; headers: Array<{ name: string; value: string }>;
  attachments?: Array<{ filename: string | null; content_type: string; size: number }>; truncated?: boolean;
}

export interface DnsRecord {
  purpose: string; type: string; host: string; value: string; required: boolean; state: string;
  found: unknown; detail: string | null; checked_at: string | null; selector?: string; key_status?: string; key_role?: string;
}
export interface Domain {
  id: string; name: string; status: string; created_at: string; verified_at: string | null; last_checked_at: string | null;
  dkim: { selector: string; algorithm: string }; dns_records: DnsRecord[];
}

export interface Webhook { id: string; url: string; mode: string; events: string[]; enabled: boolean; created_at: string; secret?: string }
export interface WebhookAttempt { attempt: number; attempted_at: string; success: boolean; status_code: number | null; latency_ms: number | null; response_body?: string | null; error?: string | null }
export interface WebhookDelivery {
  id: string; webhook_id: string; event_id: string; event_type: string; status: string; attempts: number;
  next_attempt_at: string | null; last_status_code: number | null; last_error: string | null; created_at: string; completed_at: string | null;
  attempt_log: WebhookAttempt[];
  /** The envelope sent (console-api adds it to the delivery GET). */
  request_body?: unknown;
}

export interface Suppression { id: string; email: string; reason: string; source_message_id: string | null; created_at: string }

export interface ApiKey { id: string; name: string; mode: 'test' | 'live'; prefix: string; scopes: string[]; created_at: string; last_used_at: string | null; revoked: boolean }

export interface Counts { sent: number; delivered: number; bounced: number; complained: number; opened: number }
export interface Overview {
  today: Counts; last_30_days: Counts; daily: Array<Counts & { date: string }>;
  queue: { queued: number; deferred: number; scheduled: number };
  deferred_by_destination: Array<{ domain: string; count: number }>;
  warmup: Array<{ pool: string; ip: string; day: number | null; cap: number | null; sent_today: number }>;
  alerts: Array<{ kind: string; subject: string; detail: string }>;
}
