// The API client: typed by src/api/schema.d.ts, which `npm run gen:api` generates from the
// server's OpenAPI document. Nothing here restates the API's shapes by hand.
import createClient from 'openapi-fetch';
import type { components, paths } from './schema';

export const api = createClient<paths>({ baseUrl: '' });

/** The event sent on a 401 answer (the session ended or never began): App shows the sign-in screen. */
export const UNAUTHENTICATED_EVENT = 'scenario-unauthenticated';

api.use({
  onResponse({ response }) {
    if (response.status === 401) window.dispatchEvent(new Event(UNAUTHENTICATED_EVENT));
    return undefined;
  },
});

export type Schemas = components['schemas'];
export type Kind = Schemas['Kind'];
export type ParamSpec = Schemas['ParamSpec'];
export type Aggregator = Schemas['Aggregator'];
export type Components = Schemas['Components'];
export type Problem = Schemas['Problem'];
export type ValidationResult = Schemas['ValidationResult'];
export type VariableType = Schemas['VariableType'];
export type Suggestion = Schemas['Suggestion'];
export type ScenarioSummary = Schemas['Scenario'];
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

