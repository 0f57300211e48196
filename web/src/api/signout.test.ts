import createClient from 'openapi-fetch';
import { describe, expect, it } from 'vitest';
import { middleware, startSigningOut } from './client';
import type { paths } from './schema';

// Its own file: startSigningOut holds for the rest of the module's life, as for the page.
describe('signing out', () => {
  it('sends requests before, and none once it has started: they are answered 401 here', async () => {
    const sent: string[] = [];
    const client = createClient<paths>({
      baseUrl: 'http://server.test',
      fetch: async (r: Request) => {
        sent.push(new URL(r.url).pathname);
        return new Response('{}', { status: 200, headers: { 'Content-Type': 'application/json' } });
      },
    });
    client.use(middleware);
    const graph = { nodes: [], edges: [] } as never;
    expect((await client.POST('/api/validation', { body: { graph } })).response.status).toBe(200);
    startSigningOut();
    expect((await client.POST('/api/validation', { body: { graph } })).response.status).toBe(401);
    expect(sent).toEqual(['/api/validation']);
  });
});
