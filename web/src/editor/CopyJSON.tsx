// "Copy as JSON": puts a value on the clipboard, pretty-printed.
import { CopyText } from './CopyText';

export function CopyJSON({ value, what }: { value: unknown; what: string }) {
  return <CopyText text={JSON.stringify(value, null, 2)} what={`${what} as JSON`} label="Copy as JSON" />;
}
