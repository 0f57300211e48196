// @vitest-environment happy-dom
// The generated form fields, rendered in Happy DOM: what each editor kind shows and what value
// it reports as the author types.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { act } from 'react';
import { createRoot, type Root } from 'react-dom/client';
import type { Aggregator, ParamSpec, Problem } from '../api/client';
import { expr } from '../graph/model';
import { ParamField } from './ParamField';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

const spec = (s: Partial<ParamSpec>): ParamSpec => ({ name: 'p', in: 'parameters', editor: 'string', required: false, description: '', label: '', ...s }) as ParamSpec;
const aggregators: Aggregator[] = [
  { name: 'Count', input: 'none', description: '' },
  { name: 'Sum', input: 'number', description: '' },
  { name: 'ApproxPercentile', input: 'number', description: '', parameters: [spec({ name: 'percentile', editor: 'number', default: 0.5 })] },
];

let root: Root | undefined;
let host: HTMLElement | undefined;
afterEach(() => {
  act(() => root?.unmount());
  host?.remove();
  root = undefined;
});

function render(props: { spec: ParamSpec; value: unknown; problems?: Problem[]; suggestions?: string[] }) {
  const onChange = vi.fn();
  host = document.createElement('div');
  document.body.append(host);
  root = createRoot(host);
  act(() => root!.render(<ParamField spec={props.spec} value={props.value} onChange={onChange} problems={props.problems ?? []} suggest={async () => []} aggregators={aggregators} suggestions={props.suggestions} />));
  return { onChange, host };
}

/** Types text into an input or textarea as a user would: React hears an input event. */
function type(el: Element | null, text: string) {
  const proto = el instanceof HTMLTextAreaElement ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
  act(() => {
    Object.getOwnPropertyDescriptor(proto, 'value')!.set!.call(el, text);
    el!.dispatchEvent(new Event('input', { bubbles: true }));
  });
}

function choose(el: Element | null, value: string) {
  act(() => {
    (el as HTMLSelectElement).value = value;
    el!.dispatchEvent(new Event('change', { bubbles: true }));
  });
}

describe('ParamField', () => {
  it('a string field with suggestions lists them in a datalist its input names, and still takes any text', () => {
    const { onChange, host } = render({ spec: spec({ name: 'topic', required: true }), value: '', suggestions: ['alerts', 'payments'] });
    const input = host.querySelector('[data-testid="input-topic"]') as HTMLInputElement;
    const list = host.querySelector('datalist')!;
    expect(input.getAttribute('list')).toBe(list.id);
    expect([...list.querySelectorAll('option')].map((o) => o.value)).toEqual(['alerts', 'payments']);
    type(input, 'orders');
    expect(onChange).toHaveBeenLastCalledWith('orders');
  });
  it('a string field without suggestions (none, or an empty list) has no datalist', () => {
    for (const suggestions of [undefined, []]) {
      const { host } = render({ spec: spec({ name: 'topic' }), value: 'x', suggestions });
      expect(host.querySelector('datalist')).toBeNull();
      expect(host.querySelector('[data-testid="input-topic"]')!.hasAttribute('list')).toBe(false);
      act(() => root?.unmount());
      host.remove();
    }
  });
  it('a number field reports numbers, integers truncated, and empty as absent', () => {
    const { onChange, host } = render({ spec: spec({ name: 'size', editor: 'integer', label: 'Size' }), value: 3 });
    const input = host.querySelector('[data-testid="input-size"]') as HTMLInputElement;
    expect(input.value).toBe('3');
    expect(host.querySelector('.param-label')!.textContent).toContain('Size');
    type(input, '12.7');
    expect(onChange).toHaveBeenLastCalledWith(12);
    type(input, '');
    expect(onChange).toHaveBeenLastCalledWith(undefined);
  });

  it('an optional text parameter emptied is removed; a required one stays as empty text', () => {
    const optional = render({ spec: spec({ name: 'topic' }), value: 'a' });
    type(optional.host.querySelector('[data-testid="input-topic"]'), '');
    expect(optional.onChange).toHaveBeenLastCalledWith(undefined);
    act(() => root!.unmount());
    const required = render({ spec: spec({ name: 'topic', required: true }), value: 'a' });
    expect(required.host.querySelector('.required')).not.toBeNull();
    type(required.host.querySelector('[data-testid="input-topic"]'), '');
    expect(required.onChange).toHaveBeenLastCalledWith('');
  });

  it('a duration field says what it takes', () => {
    const { host } = render({ spec: spec({ name: 'windowLength', editor: 'duration' }), value: undefined });
    expect((host.querySelector('[data-testid="input-windowLength"]') as HTMLInputElement).placeholder).toBe('e.g. 60s, 1h, PT1H');
  });

  it('an optional enum offers its default, which removes the value', () => {
    const { onChange, host } = render({ spec: spec({ name: 'emitWhen', editor: 'enum', options: ['OnEnd', 'OnEvent'], default: 'OnEnd' }), value: 'OnEvent' });
    const select = host.querySelector('[data-testid="input-emitWhen"]') as HTMLSelectElement;
    expect([...select.options].map((o) => o.textContent)).toEqual(['(default: OnEnd)', 'OnEnd', 'OnEvent']);
    choose(select, '');
    expect(onChange).toHaveBeenLastCalledWith(undefined);
    choose(select, 'OnEnd');
    expect(onChange).toHaveBeenLastCalledWith('OnEnd');
  });

  it('a checkbox reports true and false', () => {
    const { onChange, host } = render({ spec: spec({ name: 'emitWhenEventLeft', editor: 'boolean' }), value: false });
    act(() => (host.querySelector('[data-testid="input-emitWhenEventLeft"]') as HTMLInputElement).click());
    expect(onChange).toHaveBeenLastCalledWith(true);
  });

  it('a JSON field reports the value once the text parses, and says why it does not', () => {
    const { onChange, host } = render({ spec: spec({ name: 'schema', editor: 'json-schema' }), value: undefined });
    const area = host.querySelector('[data-testid="input-schema"]');
    type(area, '{"type": "obj');
    expect(onChange).not.toHaveBeenCalled();
    expect(host.querySelector('.field-error')).not.toBeNull();
    type(area, '{"type": "object"}');
    expect(onChange).toHaveBeenLastCalledWith({ type: 'object' });
    expect(host.querySelector('.field-error')).toBeNull();
  });

  it("shows the field's problems", () => {
    const { host } = render({ spec: spec({ name: 'windowLength', editor: 'duration' }), value: 'soon', problems: [{ code: 'x', field: 'windowLength', message: 'not a duration: "soon"' }] });
    expect(host.querySelector('[data-testid="field-error"]')!.textContent).toBe('not a duration: "soon"');
  });

  describe('aggregations', () => {
    const aggs = spec({ name: 'aggregations', editor: 'aggregations', required: true });
    it('adds a Count named count first', () => {
      const { onChange, host } = render({ spec: aggs, value: [] });
      act(() => (host.querySelector('[data-testid="add-aggregation"]') as HTMLButtonElement).click());
      expect(onChange).toHaveBeenLastCalledWith([{ name: 'count', aggregator: 'Count' }]);
    });
    it('choosing Sum leaves aggregateBy empty for the author, and an aggregator with parameters gets their defaults', () => {
      const { onChange, host } = render({ spec: aggs, value: [{ name: 'total', aggregator: 'Count' }] });
      const select = host.querySelector('[data-testid="aggregation-aggregator"]');
      choose(select, 'Sum');
      expect(onChange).toHaveBeenLastCalledWith([{ name: 'total', aggregator: 'Sum', aggregateBy: expr('') }]);
      choose(select, 'ApproxPercentile');
      expect(onChange).toHaveBeenLastCalledWith([{ name: 'total', aggregator: 'ApproxPercentile', aggregateBy: expr(''), percentile: 0.5 }]);
    });
    it('keeps an aggregateBy already written when the aggregator changes', () => {
      const { onChange, host } = render({ spec: aggs, value: [{ name: 'total', aggregator: 'Sum', aggregateBy: expr('#input.amount') }] });
      choose(host.querySelector('[data-testid="aggregation-aggregator"]'), 'ApproxPercentile');
      expect(onChange).toHaveBeenLastCalledWith([{ name: 'total', aggregator: 'ApproxPercentile', aggregateBy: expr('#input.amount'), percentile: 0.5 }]);
    });
  });
});
