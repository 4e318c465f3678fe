import { SlotClassifier, slotContextFeatures } from './slot-classifier';

describe('slotContextFeatures', () => {
  const words = ['fly', 'to', 'london', 'from', '@city', 'tomorrow'];

  it('stops at the next entity occurrence on each side (an adjacent one is a feature) and leaves out the ends', () => {
    // "london" (2..3): the occurrence after "from" ends the window on the right
    expect(slotContextFeatures(words, 2, 3, 'segment')).toEqual([
      'b',
      'L1:to',
      'Lb:to',
      'L2:fly',
      'Lb:fly',
      'R1:from',
      'Rb:from',
    ]);
    expect(slotContextFeatures(['@city', 'berlin'], 1, 2, 'segment')).toEqual(['b', 'L1:@city', 'Lb:@city']);
    expect(slotContextFeatures(['berlin'], 0, 1, 'segment')).toEqual(['b']);
  });

  it('keeps the window of models trained before: across other occurrences, with the sentence ends', () => {
    expect(slotContextFeatures(words, 2, 3, 'crossing')).toEqual([
      'b',
      'L1:to',
      'Lb:to',
      'R1:from',
      'Rb:from',
      'L2:fly',
      'Lb:fly',
      'R2:@city',
      'Rb:@city',
      'R3:tomorrow',
      'Rb:tomorrow',
    ]);
    expect(slotContextFeatures(['berlin'], 0, 1, 'crossing')).toEqual([
      'b',
      'L1:<s>',
      'Lb:<s>',
      'R1:</s>',
      'Rb:</s>',
    ]);
  });
});

describe('SlotClassifier', () => {
  it('answers with the window it was trained with, through its serialized form', () => {
    const examples = [
      { words: ['from', 'paris', 'to', '@city'], start: 1, end: 2, slot: 'from' },
      { words: ['from', '@city', 'to', 'rome'], start: 3, end: 4, slot: 'to' },
    ];
    const trained = SlotClassifier.train([examples], 1);
    expect(trained.toJSON().context).toBe('segment');
    const loaded = SlotClassifier.fromJSON(JSON.parse(JSON.stringify(trained.toJSON())));
    expect(loaded.predict(0, ['to', 'rome', 'from', '@city'], 1, 2)).toEqual(
      trained.predict(0, ['to', 'rome', 'from', '@city'], 1, 2),
    );
    // a classifier serialized before `context` existed reads its features with the crossing window
    const { context: _, ...before } = trained.toJSON();
    expect(SlotClassifier.fromJSON(before).toJSON().context).toBeUndefined();
  });
});
