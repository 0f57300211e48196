// A button that puts text on the clipboard and says so.
import { useState } from 'react';

export function CopyText({ text, what, label = 'Copy' }: { text: string; what: string; label?: string }) {
  const [done, setDone] = useState('');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setDone('Copied');
    } catch {
      setDone('The browser refused the clipboard');
    }
  };
  return (
    <button type="button" className="small copy" onClick={copy} title={`Copy ${what} to the clipboard`}>
      {done || label}
    </button>
  );
}
