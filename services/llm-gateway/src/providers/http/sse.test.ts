import { SseLineTooLong, SseParser } from './sse';

const bytes = (text: string) => new TextEncoder().encode(text);

describe('SSE parser', () => {
  it('reads frames split anywhere, even inside a multi-byte character or a CRLF pair', () => {
    const wire = bytes('data: {"a":"é€"}\r\n\r\nevent: ping\r\ndata: x\r\n\r\n');
    for (let cut = 1; cut < wire.length; cut += 1) {
      const parser = new SseParser();
      const events = [
        ...parser.push(wire.subarray(0, cut)),
        ...parser.push(wire.subarray(cut)),
        ...parser.end(),
      ];
      expect(events).toEqual([
        { event: 'message', data: '{"a":"é€"}' },
        { event: 'ping', data: 'x' },
      ]);
    }
  });

  it('skips comments and unknown fields, joins multi-line data, accepts CR and LF endings and a BOM', () => {
    const parser = new SseParser();
    const events = [
      ...parser.push(
        bytes('\uFEFF: keep-alive\n\nid: 7\nretry: 10\ndata:one\ndata: two\n\rdata: [DONE]\r\r'),
      ),
      ...parser.end(),
    ];
    expect(events).toEqual([
      { event: 'message', data: 'one\ntwo' },
      { event: 'message', data: '[DONE]' },
    ]);
  });

  it('drops an unfinished frame at the end of the stream', () => {
    const parser = new SseParser();
    expect(parser.push(bytes('data: complete\n\ndata: cut'))).toEqual([
      { event: 'message', data: 'complete' },
    ]);
    expect(parser.end()).toEqual([]);
  });

  it('refuses a frame whose data lines never end it instead of buffering without bound', () => {
    const parser = new SseParser();
    const piece = bytes(`data: ${'x'.repeat(1024)}\n`.repeat(1024));
    expect(() => {
      for (let i = 0; i < 10; i += 1) parser.push(piece);
    }).toThrow(SseLineTooLong);
  });

  it('refuses a line that never ends instead of buffering without bound', () => {
    const parser = new SseParser();
    const piece = bytes(`data: ${'x'.repeat(1024 * 1024)}`);
    expect(() => {
      for (let i = 0; i < 10; i += 1) parser.push(piece);
    }).toThrow(SseLineTooLong);
  });
});
