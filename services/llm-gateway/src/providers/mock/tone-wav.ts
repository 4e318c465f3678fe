/** The mock's speech: 8 kHz, 8-bit mono PCM (small, and every player reads it). */
const RATE = 8_000;
/** a speaking pace: 15 characters a second */
const CHARACTERS_PER_SECOND = 15;
/** the longest answer, whatever the input (4096 characters at speed 0.25 would be 18 minutes) */
const MAX_SECONDS = 60;

/** Seconds of the mock's speech for `characters` of input at `speed` (OpenAI's 0.25 to 4). */
export const mockSpeechSeconds = (characters: number, speed = 1): number =>
  Math.min(MAX_SECONDS, Math.max(0.1, characters / CHARACTERS_PER_SECOND / speed));

/** A quiet 440 Hz tone as a WAV file, `seconds` long (rounded to the sample). */
export function toneWav(seconds: number): Buffer {
  const samples = Math.round(seconds * RATE);
  const file = Buffer.alloc(44 + samples);
  file.write('RIFF', 0, 'ascii');
  file.writeUInt32LE(36 + samples, 4);
  file.write('WAVEfmt ', 8, 'ascii');
  file.writeUInt32LE(16, 16);
  file.writeUInt16LE(1, 20); // PCM
  file.writeUInt16LE(1, 22); // mono
  file.writeUInt32LE(RATE, 24);
  file.writeUInt32LE(RATE, 28); // bytes a second
  file.writeUInt16LE(1, 32);
  file.writeUInt16LE(8, 34); // 8-bit samples are unsigned, silence at 128
  file.write('data', 36, 'ascii');
  file.writeUInt32LE(samples, 40);
  for (let i = 0; i < samples; i++)
    file[44 + i] = 128 + Math.round(24 * Math.sin((2 * Math.PI * 440 * i) / RATE));
  return file;
}
