import { billableText, visibleText } from './answer-text';

// Mistral's reasoning answer, as its SDK's AssistantMessage / DeltaMessage type it (ContentChunk, ThinkChunk)
const MAGISTRAL = [
  {
    type: 'thinking',
    thinking: [
      { type: 'text', text: 'Two and two. ' },
      { type: 'reference', reference_ids: [1] },
    ],
  },
  { type: 'text', text: 'It is four.' },
];

describe('the text of a chat content value', () => {
  it('a string is itself; nothing is empty', () => {
    for (const read of [visibleText, billableText]) {
      expect(read('plain answer')).toBe('plain answer');
      expect([null, undefined, 42, {}].map(read)).toEqual(['', '', '', '']);
    }
  });

  it('parts: the answer is the text parts; what is billed adds the thinking', () => {
    expect(visibleText(MAGISTRAL)).toBe('It is four.');
    expect(billableText(MAGISTRAL)).toBe('Two and two. It is four.');
  });

  it('a text part without its type (Mistral’s default) counts; other parts and junk do not', () => {
    const content = [
      { text: 'a' },
      { type: 'image_url', image_url: { url: 'x' } },
      null,
      'b',
      { type: 'text' },
    ];
    expect(visibleText(content)).toBe('a');
    expect(billableText([{ type: 'thinking', thinking: 'as a string' }])).toBe('as a string');
  });
});
