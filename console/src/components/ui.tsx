/** Small building blocks every screen uses: labelled fields, notices, status badges, times, copy buttons. */
import type { ComponentChildren, JSX } from 'preact';
import { useState } from 'preact/hooks';
import { errorText } from './use-async';

let fieldCounter = 0;
function useFieldId(): string {
  const [id] = useState(() => `f${++fieldCounter}`);
  return id;
}

type InputProps = Omit<JSX.InputHTMLAttributes<HTMLInputElement>, 'label' | 'onInput' | 'value'> & { label: string; value: string; onInput(value: string): void; hint?: string };

export function Field({ label, value, onInput, hint, ...rest }: InputProps) {
  const id = useFieldId();
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <input id={id} value={value} onInput={(e) => onInput((e.target as HTMLInputElement).value)} aria-describedby={hint ? `${id}-hint` : undefined} {...rest} />
      {hint && <small id={`${id}-hint`}>{hint}</small>}
    </div>
  );
}

export function Select({ label, value, onChange, options }: { label: string; value: string; onChange(v: string): void; options: Array<[string, string]> }) {
  const id = useFieldId();
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <select id={id} value={value} onChange={(e) => onChange((e.target as HTMLSelectElement).value)}>
        {options.map(([v, text]) => <option value={v} key={v}>{text}</option>)}
      </select>
    </div>
  );
}

export function Notice({ kind = 'info', children }: { kind?: 'info' | 'error' | 'success' | 'warning'; children: ComponentChildren }) {
  return <div class={`notice notice-${kind}`} role={kind === 'error' ? 'alert' : 'status'}>{children}</div>;
}

export function ErrorNotice({ error }: { error?: unknown }) {
  if (!error) return null;
  return <Notice kind="error">{typeof error === 'string' ? error : errorText(error)}</Notice>;
}

export function Badge({ value }: { value: string | null | undefined }) {
  const v = value ?? 'unknown';
  return <span class={`badge badge-${v.replace(/[^a-z_]/gi, '')}`}>{v.replace(/_/g, ' ')}</span>;
}

export function Time({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <span class="muted">—</span>;
  const d = new Date(iso);
  return <time dateTime={iso} title={iso}>{d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' })}</time>;
}

export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  const copy = async () => {
    await copyText(text);
    setDone(true);
    setTimeout(() => setDone(false), 1500);
  };
  return <button type="button" class="button small" onClick={copy} aria-label={`${done ? "Copied" : label}: ${text.slice(0, 60)}`} data-copy={text}>{done ? 'Copied' : label}</button>;
}

/** Clipboard API where the page is a secure context; otherwise a hidden textarea and execCommand. */
export async function copyText(text: string): Promise<void> {
  if (navigator.clipboard && isSecureContext) {
    try { await navigator.clipboard.writeText(text); return; } catch { /* fall back below */ }
  }
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.className = 'offscreen';
  document.body.append(area);
  area.select();
  document.execCommand('copy');
  area.remove();
}

export function Page({ title, actions, children }: { title: string; actions?: ComponentChildren; children: ComponentChildren }) {
  return (
    <section class="page" aria-labelledby="page-title">
      <header class="page-head">
        <h1 id="page-title" tabIndex={-1}>{title}</h1>
        {actions && <div class="actions">{actions}</div>}
      </header>
      {children}
    </section>
  );
}

export function Card({ title, children, id }: { title?: string; children: ComponentChildren; id?: string }) {
  return (
    <section class="card" aria-label={title} id={id}>
      {title && <h2>{title}</h2>}
      {children}
    </section>
  );
}

/** A button that runs an async action, shows it is busy, and reports a failure next to itself. */
export function ActionButton({ onAction, children, kind = '', confirm: question }: { onAction(): Promise<unknown>; children: ComponentChildren; kind?: string; confirm?: string }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const run = async () => {
    if (question && !window.confirm(question)) return;
    setBusy(true);
    setError('');
    try { await onAction(); } catch (err) { setError(errorText(err)); } finally { setBusy(false); }
  };
  return (
    <span class="action">
      <button type="button" class={`button ${kind}`} onClick={run} disabled={busy} aria-busy={busy}>{children}</button>
      {error && <span class="inline-error" role="alert">{error}</span>}
    </span>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="empty">{children}</p>;
}
