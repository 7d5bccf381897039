/** Loads data for a screen and reloads on demand or on an interval (live-updating lists). */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiFailure } from '../api/client';

export interface Async<T> { data?: T; error?: string; loading: boolean; reload(): Promise<void> }

export function useAsync<T>(load: () => Promise<T>, deps: unknown[], refreshMs = 0): Async<T> {
  const [state, setState] = useState<{ data?: T; error?: string; loading: boolean }>({ loading: true });
  const generation = useRef(0);
  const reload = useCallback(async () => {
    const mine = ++generation.current;
    try {
      const data = await load();
      if (mine === generation.current) setState({ data, loading: false });
    } catch (err) {
      if (mine === generation.current) setState((s) => ({ data: s.data, error: errorText(err), loading: false }));
    }
  }, deps);
  useEffect(() => {
    setState((s) => ({ ...s, loading: true }));
    void reload();
    if (!refreshMs) return () => { generation.current++; };
    const timer = setInterval(() => { if (!document.hidden) void reload(); }, refreshMs);
    return () => { clearInterval(timer); generation.current++; };
  }, [reload, refreshMs]);
  return { ...state, reload };
}

export function errorText(err: unknown): string {
  if (err instanceof ApiFailure) return err.error.message || `Request failed (${err.status})`;
  return err instanceof Error ? err.message : String(err);
}
