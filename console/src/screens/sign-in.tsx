/** Sign-in: Email, Password, Sign in. Throttling and the error wording come from the server. */
import { useState } from 'preact/hooks';
import { signIn, type Session } from '../api/session';
import { Field, ErrorNotice } from '../components/ui';
import { errorText } from '../components/use-async';

export function SignIn({ onSignedIn }: { onSignedIn(s: Session): void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError('');
    try {
      onSignedIn(await signIn(email, password));
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="auth" id="main">
      <form class="auth-card" onSubmit={submit} aria-labelledby="signin-title">
        <h1 id="signin-title">Sign in to Pigeon</h1>
        <ErrorNotice error={error} />
        <Field label="Email" type="email" autoComplete="username" required value={email} onInput={setEmail} />
        <Field label="Password" type="password" autoComplete="current-password" required value={password} onInput={setPassword} />
        <button type="submit" class="button primary" disabled={busy}>Sign in</button>
        <p class="muted small">Accounts are created by the operator: <code>pigeon users create</code>.</p>
      </form>
    </main>
  );
}
