import { describe, expect, it } from 'vitest';
import { nextStep, type ShownPage } from './plan.js';

const streaming = (shown: string | null, ts = '1.1'): ShownPage => ({ ts, state: 'streaming', shown });
const posted = (shown: string | null, ts = '1.1'): ShownPage => ({ ts, state: 'posted', shown });

describe('nextStep', () => {
  it('starts the open end of an answer as a stream, and posts a page that is already whole', () => {
    expect(nextStep(['Hel'], [], false, true)).toEqual({
      kind: 'create',
      index: 0,
      text: 'Hel',
      stream: true,
    });
    expect(nextStep(['Hello'], [], true, true)).toEqual({
      kind: 'create',
      index: 0,
      text: 'Hello',
      stream: false,
    });
    expect(nextStep(['Hel'], [], false, false)).toEqual({
      kind: 'create',
      index: 0,
      text: 'Hel',
      stream: false,
    });
  });

  it('appends only what is new to a stream, as Slack will render it', () => {
    expect(nextStep(['Hello <b'], [streaming('Hello')], false, true)).toEqual({
      kind: 'append',
      index: 0,
      text: 'Hello <b',
      delta: ' <\u200Bb',
    });
    expect(nextStep(['Hello'], [streaming('Hello')], false, true)).toBeNull();
  });

  it('stops a stream when its page is whole (the answer finished, or moved on to the next page)', () => {
    expect(nextStep(['Hello'], [streaming('Hello')], true, true)).toEqual({ kind: 'stop', index: 0 });
    expect(nextStep(['Hello', 'more'], [streaming('Hello')], false, true)).toEqual({
      kind: 'stop',
      index: 0,
    });
    expect(nextStep(['Hello', 'more'], [posted('Hello')], false, true)).toEqual({
      kind: 'create',
      index: 1,
      text: 'more',
      stream: true,
    });
  });

  it('sends what a closing stream still lacks with its stop: one call, not an append and a stop', () => {
    expect(nextStep(['Hello there'], [streaming('Hello')], true, true)).toEqual({
      kind: 'stop',
      index: 0,
      text: 'Hello there',
      delta: ' there',
    });
    // A page that moved on to the next one closes the same way, as Slack will render it.
    expect(nextStep(['Hello <b', 'more'], [streaming('Hello')], false, true)).toEqual({
      kind: 'stop',
      index: 0,
      text: 'Hello <b',
      delta: ' <\u200Bb',
    });
  });

  it('stops, then edits, a stream whose text was replaced or is unknown', () => {
    expect(nextStep(['Goodbye'], [streaming('Hello')], false, true)).toEqual({ kind: 'stop', index: 0 });
    expect(nextStep(['Goodbye'], [{ ts: '1.1', state: 'stopped', shown: 'Hello' }], false, true)).toEqual({
      kind: 'edit',
      index: 0,
      text: 'Goodbye',
    });
    expect(nextStep(['Hello'], [streaming(null)], false, true)).toEqual({ kind: 'stop', index: 0 });
  });

  it('edits a posted message only when its text differs', () => {
    expect(nextStep(['Hello there'], [posted('Hello')], false, true)).toEqual({
      kind: 'edit',
      index: 0,
      text: 'Hello there',
    });
    expect(nextStep(['Hello'], [posted('Hello')], true, true)).toBeNull();
    expect(nextStep(['Hello'], [posted(null)], true, true)).toEqual({
      kind: 'edit',
      index: 0,
      text: 'Hello',
    });
  });

  it('removes surplus pages it knows, and leaves alone those it cannot tell', () => {
    expect(nextStep(['short'], [posted('short'), posted('old', '1.2')], true, true)).toEqual({
      kind: 'delete',
      index: 1,
    });
    expect(nextStep(['short'], [posted('short'), streaming('old', '1.2')], true, true)).toEqual({
      kind: 'stop',
      index: 1,
    });
    expect(nextStep([], [posted(null)], true, true)).toBeNull();
  });

  it('works page by page, in order: the first difference goes first', () => {
    expect(nextStep(['A2', 'B2'], [posted('A'), posted('B', '1.2')], true, true)).toEqual({
      kind: 'edit',
      index: 0,
      text: 'A2',
    });
  });
});
