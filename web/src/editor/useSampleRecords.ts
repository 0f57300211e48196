import { useEffect, useState } from 'react';

const recordsKey = (name: string) => `scenario-designer:test-records:${name}`;

/**
 * The test panel's sample records of a scenario, kept in the browser's local storage, and why
 * they are not kept there ('' when they are): the storage holds about 5 MB for the whole site,
 * and records it cannot take stay only while the page is open (before, the exception of
 * setItem blanked the designer and lost unsaved edits).
 */
export function useSampleRecords(name: string): [string, (text: string) => void, string] {
  const [records, setRecords] = useState(() => read(recordsKey(name)));
  const [notKept, setNotKept] = useState('');
  useEffect(() => {
    setNotKept(write(recordsKey(name), records));
  }, [name, records]);
  return [records, setRecords, notKept];
}

function read(key: string): string {
  try {
    return localStorage.getItem(key) ?? '';
  } catch {
    return ''; // storage denied (a browser setting)
  }
}

/** Stores value under key; what went wrong, '' when nothing did. */
export function write(key: string, value: string): string {
  try {
    localStorage.setItem(key, value);
    return '';
  } catch (e) {
    try {
      localStorage.removeItem(key); // not an older set of records in its place
    } catch {
      // storage denied: nothing to remove
    }
    const mb = (value.length / 1e6).toFixed(1);
    return `These records (${mb} M characters) are not kept in the browser's storage (${e instanceof Error ? e.message : String(e)}): they stay only while this page is open. Save them as a test case to keep them.`;
  }
}
