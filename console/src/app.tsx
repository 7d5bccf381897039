/**
 * The shell: loads the session, shows sign-in (or set-password from a one-time
 * link) without one, and otherwise the navigation, the account switcher for
 * admins and the current screen.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, onSessionEnded, setActingAccount, getActingAccount, getViewMode, setViewMode } from './api/client';
import { loadSession, signOut, type Session } from './api/session';
import { href, useRoute, type Route } from './router';
import { SignIn } from './screens/sign-in';
import { SetPassword } from './screens/set-password';
import { Overview } from './screens/overview';
import { Messages } from './screens/messages';
import { MessageDetail } from './screens/message-detail';
import { Domains } from './screens/domains';
import { Webhooks } from './screens/webhooks';
import { Suppressions } from './screens/suppressions';
import { IpPools } from './screens/ip-pools';
import { ApiKeys } from './screens/api-keys';
import { Settings } from './screens/settings';
import { Operator } from './screens/operator';

const NAV: Array<{ name: string; label: string; adminOnly?: boolean }> = [
  { name: 'overview', label: 'Overview' },
  { name: 'messages', label: 'Messages' },
  { name: 'domains', label: 'Domains' },
  { name: 'webhooks', label: 'Webhooks' },
  { name: 'suppressions', label: 'Suppressions' },
  { name: 'ip-pools', label: 'IP pools' },
  { name: 'api-keys', label: 'API keys' },
  { name: 'settings', label: 'Settings' },
  { name: 'operator', label: 'Operator', adminOnly: true },
];

export function App() {
  const route = useRoute();
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  useEffect(() => {
    onSessionEnded(() => setSession(null));
    void loadSession().then(setSession);
  }, []);
  if (route.name === 'set-password') return <SetPassword token={route.args[0] ?? ''} />;
  if (session === undefined) return <p class="loading" role="status">Loading…</p>;
  if (session === null) return <SignIn onSignedIn={setSession} />;
  return <Shell session={session} route={route} onSignedOut={() => setSession(null)} />;
}

function Shell({ session, route, onSignedOut }: { session: Session; route: Route; onSignedOut(): void }) {
  const [account, setAccount] = useState(getActingAccount());
  const [mode, setMode] = useState(getViewMode());
  const [menuOpen, setMenuOpen] = useState(false);
  const isAdmin = session.user.role === 'admin';
  const current = route.name || 'overview';
  useEffect(() => setMenuOpen(false), [route.name, route.args.join('/')]);
  useEffect(() => document.getElementById('page-title')?.focus(), [current]);
  const switchAccount = (name: string) => {
    setActingAccount(name);
    sessionStorage.setItem('pigeon.account', name);
    setAccount(name);
  };
  const [modeNote, setModeNote] = useState('');
  const switchMode = async (next: 'live' | 'test') => {
    setViewMode(next);
    setModeNote('');
    // A server that does not act on X-Pigeon-Mode would show live data under a Sandbox label: ask it which mode it used.
    const used = next === 'test' ? await api.get<{ key: { mode: string } }>('/v1/account').then((a) => a.key.mode, () => 'live') : 'live';
    if (used !== next) {
      setViewMode('live');
      setModeNote('This appliance does not offer the sandbox view to console sessions; showing live data.');
      next = 'live';
    }
    sessionStorage.setItem('pigeon.mode', next);
    setMode(next);
  };
  const doSignOut = async () => {
    try { await signOut(); } finally { onSignedOut(); location.hash = ''; }
  };
  return (
    <div class="shell">
      <a class="skip" href="#main">Skip to content</a>
      <header class="topbar">
        <a class="brand" href={href('overview')}>Pigeon</a>
        <button type="button" class="button menu-toggle" aria-expanded={menuOpen} aria-controls="nav" onClick={() => setMenuOpen(!menuOpen)}>Menu</button>
        <div class="who">
          {isAdmin && session.accounts.length > 0 ? (
            <label class="switcher">
              <span>Account</span>
              <select value={account} onChange={(e) => switchAccount((e.target as HTMLSelectElement).value)}>
                {session.accounts.map((a) => <option key={a} value={a}>{a}</option>)}
              </select>
            </label>
          ) : <span class="account-name">{account}</span>}
          <label class="switcher">
            <span>Mode</span>
            <select value={mode} onChange={(e) => void switchMode((e.target as HTMLSelectElement).value === 'test' ? 'test' : 'live')}>
              <option value="live">Live</option>
              <option value="test">Sandbox</option>
            </select>
          </label>
          <span class="user" title={session.user.role}>{session.user.email}</span>
          <button type="button" class="button" onClick={doSignOut}>Sign out</button>
        </div>
      </header>
      <nav id="nav" class={menuOpen ? 'nav open' : 'nav'} aria-label="Main">
        <ul>
          {NAV.filter((n) => !n.adminOnly || isAdmin).map((n) => (
            <li key={n.name}><a href={href(n.name)} aria-current={current === n.name ? 'page' : undefined}>{n.label}</a></li>
          ))}
        </ul>
      </nav>
      <main id="main" key={`${account}/${mode}`} class={mode === 'test' ? 'sandbox' : undefined}>
        {modeNote && <p class="sandbox-banner" role="status">{modeNote}</p>}
        {mode === 'test' && <p class="sandbox-banner" role="note">Sandbox: messages, webhooks and keys of the sandbox (test keys); nothing here is delivered.</p>}
        <Screen route={route} session={session} />
      </main>
    </div>
  );
}

function Screen({ route, session }: { route: Route; session: Session }) {
  const isAdmin = session.user.role === 'admin';
  switch (route.name || 'overview') {
    case 'overview': return <Overview />;
    case 'messages': return route.args[0] ? <MessageDetail id={route.args[0]} /> : <Messages />;
    case 'domains': return <Domains selected={route.args[0]} />;
    case 'webhooks': return <Webhooks selected={route.args[0]} />;
    case 'suppressions': return <Suppressions />;
    case 'ip-pools': return <IpPools isAdmin={isAdmin} />;
    case 'api-keys': return <ApiKeys />;
    case 'settings': return <Settings />;
    case 'operator': return isAdmin ? <Operator /> : <NotFound />;
    default: return <NotFound />;
  }
}

function NotFound() {
  return <section class="page"><h1 id="page-title" tabIndex={-1}>Not found</h1><p>There is no such screen. <a href={href('overview')}>Go to the overview</a>.</p></section>;
}
