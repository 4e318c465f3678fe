/** One server-sent event. */
export interface SseEvent {
  /** `message` when the frame names none */
  event: string;
  data: string;
}

/** A line longer than any sane event: the stream is not what it claims to be (and memory is bounded). */
export class SseLineTooLong extends Error {}

const MAX_PENDING_CHARS = 8 * 1024 * 1024;

/**
 * An incremental parser of `text/event-stream` (WHATWG HTML §9.2): bytes may arrive split anywhere —
 * inside a frame, a line, a CRLF pair or a multi-byte UTF-8 character. Comments (`:` lines) and `id`/`retry`
 * fields are skipped; multi-line `data` is joined with `\n`; an unfinished frame at the end is dropped.
 */
export class SseParser {
  private readonly decoder = new TextDecoder('utf-8');
  private pending = '';
  private data: string[] = [];
  /** characters of `data` so far: a frame that never ends is bounded as a line is */
  private dataChars = 0;
  private event = '';
  private started = false;

  push(bytes: Uint8Array): SseEvent[] {
    return this.feed(this.decoder.decode(bytes, { stream: true }), false);
  }

  /** the end of the stream: a last line without its newline still counts, an unfinished frame does not */
  end(): SseEvent[] {
    return this.feed(this.decoder.decode(), true);
  }

  private feed(text: string, final: boolean): SseEvent[] {
    let buffer = this.pending + text;
    if (!this.started && buffer.length > 0) {
      this.started = true;
      if (buffer.charCodeAt(0) === 0xfeff) buffer = buffer.slice(1);
    }
    const out: SseEvent[] = [];
    let at = 0;
    for (;;) {
      const cr = buffer.indexOf('\r', at);
      const lf = buffer.indexOf('\n', at);
      if (cr < 0 && lf < 0) break;
      const end = cr < 0 ? lf : lf < 0 ? cr : Math.min(cr, lf);
      // a CR at the very end may be the first half of a CRLF: wait for the next bytes
      if (end === cr && cr === buffer.length - 1 && !final) break;
      this.line(buffer.slice(at, end), out);
      at = end + (end === cr && buffer[cr + 1] === '\n' ? 2 : 1);
    }
    this.pending = buffer.slice(at);
    if (this.pending.length > MAX_PENDING_CHARS)
      throw new SseLineTooLong(`an event stream line longer than ${MAX_PENDING_CHARS} characters`);
    if (final && this.pending) {
      this.line(this.pending, out);
      this.pending = '';
    }
    return out;
  }

  private line(line: string, out: SseEvent[]): void {
    if (line === '') {
      if (this.data.length > 0) out.push({ event: this.event || 'message', data: this.data.join('\n') });
      this.data = [];
      this.dataChars = 0;
      this.event = '';
      return;
    }
    if (line.charCodeAt(0) === 58 /* ':' */) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') {
      this.dataChars += value.length + 1;
      if (this.dataChars > MAX_PENDING_CHARS)
        throw new SseLineTooLong(`an event stream frame longer than ${MAX_PENDING_CHARS} characters`);
      this.data.push(value);
    } else if (field === 'event') this.event = value;
  }
}
