import { SizeLimitError } from '../core/agent/errors.js';

/** One dispatched server-sent event (WHATWG HTML §9.2.6). */
export interface SseEvent {
  /** The `event:` field, 'message' when absent. A2A SDKs send errors as `event: error`. */
  type: string;
  /** The `data:` lines joined with '\n'. */
  data: string;
  id?: string;
}

const LF = 10;
const CR = 13;
const COLON = 58;
const SPACE = 32;

const STREAM = { stream: true } as const;

/**
 * An incremental SSE parser. Feed it chunks as they arrive, split anywhere (inside a UTF-8
 * sequence, between CR and LF); it returns the events each chunk completes.
 *
 * Work per chunk is proportional to the chunk: only the new text is scanned, lines are read
 * where they lie in it, and the unfinished line at its end is kept as pieces, joined once when
 * its end arrives. So a long event arriving in many small chunks is neither rescanned nor
 * recopied, and the text before it is never copied again.
 *
 * Bounded (CWE-400): a line or an event's data larger than `maxEventBytes` throws a
 * SizeLimitError instead of growing without end. The bound counts UTF-16 code units of
 * decoded text, which for JSON is the byte count or less.
 */
export class SseParser {
  readonly #maxEventBytes: number;
  readonly #decoder = new TextDecoder('utf-8');
  /** The start of a line whose end has not arrived yet, as the chunks brought it. */
  #partial: string[] = [];
  #partialSize = 0;
  /** The previous chunk ended with CR: a LF at the start of the next one belongs to it. */
  #pendingCr = false;
  #started = false;
  /** The event's first data line, and the lines after it (nearly every event has one line). */
  #data: string | undefined;
  #moreData: string[] | undefined;
  #dataSize = 0;
  #type = '';
  #id: string | undefined;

  constructor(maxEventBytes: number) {
    this.#maxEventBytes = maxEventBytes;
  }

  push(chunk: Uint8Array | string): SseEvent[] {
    let text = typeof chunk === 'string' ? chunk : this.#decoder.decode(chunk, STREAM);
    if (!this.#started && text.length > 0) {
      this.#started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    return this.#consume(text);
  }

  /** The stream ended. Per the SSE spec an event without its closing blank line is discarded. */
  end(): SseEvent[] {
    const events = this.#consume(this.#decoder.decode());
    this.#partial = [];
    this.#partialSize = 0;
    this.#resetEvent();
    return events;
  }

  #consume(text: string): SseEvent[] {
    const events: SseEvent[] = [];
    const length = text.length;
    if (length === 0) return events;
    let i = 0;
    if (this.#pendingCr) {
      this.#pendingCr = false;
      if (text.charCodeAt(0) === LF) i = 1;
    }
    let lineStart = i;
    // Most servers end lines with LF alone: then the native indexOf finds line ends. A chunk
    // with a CR anywhere takes the character loop, which handles CR and CRLF.
    const lfOnly = text.indexOf('\r') === -1;
    while (i < length) {
      if (lfOnly) {
        const lf = text.indexOf('\n', i);
        if (lf === -1) break;
        i = lf;
      } else {
        const c = text.charCodeAt(i);
        if (c !== LF && c !== CR) {
          i++;
          continue;
        }
      }
      const c = text.charCodeAt(i);
      let event: SseEvent | undefined;
      if (this.#partial.length === 0) {
        event = this.#line(text, lineStart, i);
      } else {
        this.#partial.push(text.slice(lineStart, i));
        const line = this.#partial.join('');
        this.#partial = [];
        this.#partialSize = 0;
        event = this.#line(line, 0, line.length);
      }
      if (event !== undefined) events.push(event);
      i++;
      if (c === CR) {
        if (i === length) this.#pendingCr = true;
        else if (text.charCodeAt(i) === LF) i++;
      }
      lineStart = i;
    }
    if (lineStart < length) {
      this.#partialSize += length - lineStart;
      if (this.#partialSize > this.#maxEventBytes) throw new SizeLimitError('event', this.#maxEventBytes);
      this.#partial.push(lineStart === 0 ? text : detached(text.slice(lineStart)));
    }
    return events;
  }

  #line(buffer: string, start: number, end: number): SseEvent | undefined {
    if (start === end) return this.#dispatch();
    if (buffer.charCodeAt(start) === COLON) return undefined;
    const colon = buffer.indexOf(':', start);
    let field: string;
    let value: string;
    if (colon === -1 || colon >= end) {
      field = buffer.slice(start, end);
      value = '';
    } else {
      field = buffer.slice(start, colon);
      const valueStart = buffer.charCodeAt(colon + 1) === SPACE ? colon + 2 : colon + 1;
      value = valueStart >= end ? '' : buffer.slice(valueStart, end);
    }
    switch (field) {
      case 'data':
        this.#dataSize += value.length + 1;
        if (this.#dataSize > this.#maxEventBytes) throw new SizeLimitError('event', this.#maxEventBytes);
        if (this.#data === undefined) this.#data = value;
        else if (this.#moreData === undefined) this.#moreData = [value];
        else this.#moreData.push(value);
        break;
      case 'event':
        this.#type = value;
        break;
      case 'id':
        // Kept for the stream's life: not as a slice of the chunk it came in (see detached).
        if (!value.includes('\0')) this.#id = detached(value);
        break;
      default:
        // retry and unknown fields: nothing to do for a client that does not reconnect by itself.
        break;
    }
    return undefined;
  }

  #dispatch(): SseEvent | undefined {
    const first = this.#data;
    if (first === undefined) {
      this.#type = '';
      return undefined;
    }
    const data = this.#moreData === undefined ? first : `${first}\n${this.#moreData.join('\n')}`;
    const event: SseEvent = { type: this.#type === '' ? 'message' : this.#type, data };
    if (this.#id !== undefined) event.id = this.#id;
    this.#resetEvent();
    return event;
  }

  #resetEvent(): void {
    // No array per event: a one-line event (nearly all of them) keeps its line as it is.
    this.#data = undefined;
    this.#moreData = undefined;
    this.#dataSize = 0;
    this.#type = '';
  }
}

/**
 * A copy of a piece of a chunk's text that holds on to nothing else of it. V8 makes a slice of a
 * string a view into the whole: the unfinished line at the end of a read, kept until the next
 * read ends it, kept that read's entire text alive (16 KB and more when a busy broker reads a
 * socket that has filled up), for every open stream. Concatenating and slicing again makes V8
 * copy the characters into a string of their own; the piece is at most a line, so the copy
 * costs what the piece holds.
 */
function detached(piece: string): string {
  return ` ${piece}`.slice(1);
}

/** Writes one event the way the parser reads it; used by tests and our own test agents. */
export function formatSseEvent(data: string, type?: string): string {
  const head = type === undefined ? '' : `event: ${type}\n`;
  return `${head}${data
    .split('\n')
    .map((line) => `data: ${line}`)
    .join('\n')}\n\n`;
}
