// "Copy as JSON": puts a value on the clipboard, pretty-printed, and says so.
import { useState } from 'react';

export function CopyJSON({ value, what, testId }: { value: unknown; what: string; testId?: string }) {
  const [done, setDone] = useState('');
  const copy = async () => {
    const text = JSON.stringify(value, null, 2);
    try {
      await navigator.clipboard.writeText(text);
      setDone('copied');
    } catch {
      setDone('copy failed: the browser refused the clipboard');
    }
  };
  return (
    <button type="button" className="small copy-json" onClick={copy} title={`Copy ${what} to the clipboard as JSON`} data-testid={testId ?? 'copy-json'}>
      {done === 'copied' ? 'Copied' : 'Copy as JSON'}
      {done && done !== 'copied' && <span className="field-error"> {done}</span>}
    </button>
  );
}
