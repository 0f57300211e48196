import { useEffect, useState } from 'react';

const recordsKey = (name: string) => `scenario-designer:test-records:${name}`;

/** The test panel's sample records of a scenario, kept in the browser's local storage. */
export function useSampleRecords(name: string): [string, (text: string) => void] {
  const [records, setRecords] = useState(() => localStorage.getItem(recordsKey(name)) ?? '');
  useEffect(() => {
    localStorage.setItem(recordsKey(name), records);
  }, [name, records]);
  return [records, setRecords];
}
