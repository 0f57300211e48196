// Regenerates src/api/schema.d.ts, the API client's types, from the server's OpenAPI document.
//
//   npm run gen:api                          from the saved copy, openapi.json
//   npm run gen:api -- http://127.0.0.1:8080 from a running server: saves its document as
//                                            openapi.json first, then generates from it
//
// The saved copy is committed beside the generated file, so the types can be regenerated (and
// checked) without a server.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const saved = join(root, 'openapi.json');
const server = process.argv[2];

if (server) {
  const url = new URL('/api/openapi.json', server).href;
  const res = await fetch(url);
  if (!res.ok) {
    console.error(`GET ${url}: ${res.status} ${res.statusText}`);
    process.exit(1);
  }
  const doc = await res.json();
  writeFileSync(saved, JSON.stringify(doc, null, 2) + '\n');
  console.log(`saved ${url} as openapi.json`);
}

execFileSync(
  process.execPath,
  [join(root, 'node_modules/openapi-typescript/bin/cli.js'), saved, '--empty-objects-unknown', '-o', join(root, 'src/api/schema.d.ts')],
  { stdio: 'inherit' },
);
