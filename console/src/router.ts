/**
 * A hash router: `#/messages/msg_…` → { name: 'messages', args: ['msg_…'] }.
 * Hash routes need nothing from the server (every screen is the same index.html)
 * and match the one-time links the CLI prints (`/#/set-password/<token>`).
 */
import { useEffect, useState } from 'preact/hooks';

export interface Route { name: string; args: string[] }

export function parseHash(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/').filter(Boolean).map((p) => {
    try { return decodeURIComponent(p); } catch { return p; }
  });
  return { name: parts[0] ?? '', args: parts.slice(1) };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseHash(location.hash));
  useEffect(() => {
    const update = () => setRoute(parseHash(location.hash));
    addEventListener('hashchange', update);
    return () => removeEventListener('hashchange', update);
  }, []);
  return route;
}

export function href(...parts: string[]): string {
  return `#/${parts.map(encodeURIComponent).join('/')}`;
}

export function navigate(...parts: string[]): void {
  location.hash = href(...parts);
}
