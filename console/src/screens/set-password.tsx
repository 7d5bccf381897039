/** The page a one-time link from `pigeon users create` opens: choose a password (12 characters or more). */
import { useState } from 'preact/hooks';
import { setPassword } from '../api/session';
import { Field, ErrorNotice, Notice } from '../components/ui';
import { errorText } from '../components/use-async';

export function SetPassword({ token }: { token: string }) {
  const [password, setPw] = useState('');
  const [again, setAgain] = useState('');
  const [error, setError] = useState('');
  const [done, setDone] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    if (password !== again) return setError('The two passwords differ.');
    try {
      await setPassword(token, password);
      setDone(true);
    } catch (err) {
      setError(errorText(err));
    }
  };
  return (
    <main class="auth" id="main">
      <form class="auth-card" onSubmit={submit} aria-labelledby="setpw-title">
        <h1 id="setpw-title">Choose your password</h1>
        {done ? <Notice kind="success">Your password is set. <a href="#/">Sign in</a>.</Notice> : (
          <>
            <ErrorNotice error={error} />
            <Field label="New password" type="password" autoComplete="new-password" minLength={12} required value={password} onInput={setPw} hint="At least 12 characters." />
            <Field label="Repeat the password" type="password" autoComplete="new-password" minLength={12} required value={again} onInput={setAgain} />
            <button type="submit" class="button primary">Set password</button>
          </>
        )}
      </form>
    </main>
  );
}
