import { createHash } from 'node:crypto';
import { gcmOpen, gcmSeal } from './aes-gcm';

const key = createHash('sha256').update('a key').digest();
const other = createHash('sha256').update('another key').digest();

describe('AES-256-GCM seals', () => {
  it('open to their text under their key, with a new IV each time', () => {
    const a = gcmSeal(key, 'sk-secret ✓');
    expect(gcmOpen(key, a)).toBe('sk-secret ✓');
    expect(gcmSeal(key, 'sk-secret ✓').iv.equals(a.iv)).toBe(false);
  });

  it('refuse another key, an altered text, and a tag cut short (Node takes 4 bytes by default)', () => {
    const sealed = gcmSeal(key, 'sk-secret');
    expect(() => gcmOpen(other, sealed)).toThrow();
    const data = Buffer.from(sealed.data);
    data[0]! ^= 1;
    expect(() => gcmOpen(key, { ...sealed, data })).toThrow();
    expect(() => gcmOpen(key, { ...sealed, tag: sealed.tag.subarray(0, 4) })).toThrow();
  });
});
