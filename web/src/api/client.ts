// The API client: typed by src/api/schema.d.ts, which `npm run gen:api` generates from the
// server's OpenAPI document. Nothing here restates the API's shapes by hand.
import createClient, { type Middleware } from 'openapi-fetch';
import type { components, paths } from './schema';

export const api = createClient<paths>({ baseUrl: '' });

/** The event sent on a 401 answer (the session ended or never began): App shows the sign-in screen. */
export const UNAUTHENTICATED_EVENT = 'scenario-unauthenticated';

/**
 * Set once the user signs out (UserMenu): a request made from then on (a validation's timer
 * firing while the session ends) is not sent, since the page reloads; it is answered 401 here,
 * without a failed request in the browser's console.
 */
let signingOut = false;

/** Marks the start of a sign-out: see signingOut. */
export function startSigningOut() {
  signingOut = true;
}

/** What api does with each request and answer (exported for tests, on a client of their own). */
export const middleware: Middleware = {
  onRequest() {
    if (signingOut) return new Response(null, { status: 401 });
  },
  async onResponse({ request, response }) {
    const retried = await retryBusy(request, response);
    if ((retried ?? response).status === 401) window.dispatchEvent(new Event(UNAUTHENTICATED_EVENT));
    return retried;
  },
};

api.use(middleware);

/** How many times a GET answered 503 requests-busy is sent again. */
export const BUSY_RETRIES = 3;

/**
 * retryBusy sends a GET again while the server answers it 503 requests-busy (it holds as many
 * bytes of requests and loaded scenario versions as it takes at once: a large scenario's
 * version read beside another), up to BUSY_RETRIES times, waiting the answer's Retry-After
 * seconds (1 when it has none, at most 10) before each; it returns the last answer (the one
 * before a try that failed to reach the server), or undefined when it sent nothing again
 * (other methods and answers, which the caller shows). send and wait are fetch and a timer,
 * replaced in tests.
 */
export async function retryBusy(
  request: Request,
  response: Response,
  send: (r: Request) => Promise<Response> = (r) => fetch(r),
  wait: (ms: number) => Promise<void> = (ms) => new Promise((done) => setTimeout(done, ms)),
): Promise<Response | undefined> {
  if (request.method !== 'GET') return undefined;
  let last = response;
  for (let i = 0; i < BUSY_RETRIES && (await isRequestsBusy(last)); i++) {
    await wait(retryAfterMs(last));
    try {
      last = await send(new Request(request));
    } catch {
      break; // the server is not reached: the busy answer stands
    }
  }
  return last === response ? undefined : last;
}

async function isRequestsBusy(r: Response): Promise<boolean> {
  if (r.status !== 503) return false;
  try {
    return ((await r.clone().json()) as Partial<ProblemDetails>).code === 'requests-busy';
  } catch {
    return false;
  }
}

function retryAfterMs(r: Response): number {
  const s = Number(r.headers.get('Retry-After'));
  return Number.isFinite(s) && s > 0 ? Math.min(s, 10) * 1000 : 1000;
}

export type Schemas = components['schemas'];
export type Kind = Schemas['Kind'];
export type ParamSpec = Schemas['ParamSpec'];
export type Aggregator = Schemas['Aggregator'];
export type Components = Schemas['Components'];
export type Problem = Schemas['Problem'];
export type ValidationResult = Schemas['ValidationResult'];
export type VariableType = Schemas['VariableType'];
export type Suggestion = Schemas['Suggestion'];
export type ScenarioSummary = Schemas['ScenarioListItem'];
export type Version = Schemas['Version'];
export type Comparison = Schemas['Comparison'];
export type Difference = Schemas['Difference'];
export type ProblemDetails = Schemas['ProblemDetails'];

/** A problem+json answer as one line for people. */
export function problemText(err: unknown): string {
  if (typeof err === 'object' && err !== null) {
    const p = err as Partial<ProblemDetails>;
    const first = p.problems?.[0];
    // 403: "POST /api/scenarios/{name}/deploy needs the deployer role; ann has viewer".
    const denied = p.code === 'forbidden' && p.detail ? /needs the (\w+) role; .* has (\w+)$/.exec(p.detail) : null;
    if (denied) return `Not allowed: this needs the ${denied[1]} role; you have ${denied[2]}`;
    if (p.detail) return p.detail + (first && !p.detail.includes(first.message) ? `: ${first.message}` : '');
    if (p.title) return p.title;
  }
  return String(err);
}

