import { flacSeconds } from './flac';
import { matroskaSeconds } from './matroska';
import { looksLikeMp4, mp4Seconds } from './mp4';
import { afterId3v2, mpegAudioSeconds } from './mpeg-audio';
import { mpegPsSeconds } from './mpeg-ps';
import { oggSeconds } from './ogg';
import { wavSeconds } from './wav';

/** OpenAI's accepted upload formats, every one of which the gateway measures. */
export const AUDIO_FORMATS = [
  'flac',
  'm4a',
  'mp3',
  'mp4',
  'mpeg',
  'mpga',
  'oga',
  'ogg',
  'wav',
  'webm',
] as const;

export type AudioContainer = 'wav' | 'flac' | 'ogg' | 'matroska' | 'mp4' | 'mpeg-ps' | 'mpeg-audio';

/**
 * No codec holds a second of audio in fewer bytes (Opus silence in Ogg takes about 150, FLAC's of digital
 * silence about 30): a header saying more seconds than the bytes can carry is damaged or made up.
 */
const MIN_BYTES_PER_SECOND = 16;
const MAX_SECONDS = 7 * 24 * 3600;

/**
 * The duration of an uploaded audio file, read from its container's and frames' headers (never decoded),
 * in one pass over the bytes at most. The container is told by its first bytes, not by the file's name
 * or type, which the client chooses. Null when it is no container of OpenAI's formats, or is corrupt.
 */
export function audioDuration(file: Buffer): { container: AudioContainer; seconds: number } | null {
  const start = afterId3v2(file, 0);
  const measure = (): [AudioContainer, number | null] => {
    const magic = file.length >= 4 ? file.readUInt32BE(0) : 0;
    if (file.toString('latin1', 0, 4) === 'RIFF') return ['wav', wavSeconds(file)];
    if (file.toString('latin1', start, start + 4) === 'fLaC') return ['flac', flacSeconds(file, start)];
    if (file.toString('latin1', 0, 4) === 'OggS') return ['ogg', oggSeconds(file)];
    if (magic === 0x1a45dfa3) return ['matroska', matroskaSeconds(file)];
    if (magic === 0x000001ba) return ['mpeg-ps', mpegPsSeconds(file)];
    if (looksLikeMp4(file)) return ['mp4', mp4Seconds(file)];
    return ['mpeg-audio', mpegAudioSeconds(file, start)];
  };
  const [container, seconds] = measure();
  if (seconds === null || !believable(seconds, file.length)) return null;
  return { container, seconds: Math.round(seconds * 1000) / 1000 };
}

/**
 * Whether `seconds` of audio can be in `bytes`: a number, not negative, at most a week, and no more than the
 * bytes can carry. What a header, or a provider's answer, says beyond that is damaged or made up.
 */
export function believable(seconds: number, bytes: number): boolean {
  return (
    Number.isFinite(seconds) &&
    seconds >= 0 &&
    seconds <= MAX_SECONDS &&
    seconds * MIN_BYTES_PER_SECOND <= bytes
  );
}
