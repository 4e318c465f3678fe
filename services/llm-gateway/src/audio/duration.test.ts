import { readFileSync } from 'node:fs';
import path from 'node:path';
import { silentWav } from '../routes/wav-fixture';
import { audioDuration } from './duration';

const fixture = (name: string) => readFileSync(path.join(__dirname, '../../test/fixtures/audio', name));

/**
 * The fixtures are one spoken sentence of 2.566 s (test/fixtures/audio/make.sh), 1 s of it in the lossless
 * ones. Lossy encoders add their priming and padding, which every decoder plays: an mp3 of it is 2.736 s of
 * frames, as ffprobe says too.
 */
const MEASURED: Array<[string, string, number]> = [
  ['speech.mp3', 'mpeg-audio', 2.736],
  ['speech.mpga', 'mpeg-audio', 2.592], // MPEG-1 layer II
  ['speech.m4a', 'mp4', 2.694],
  ['speech-fragmented.m4a', 'mp4', 2.694], // as Safari's MediaRecorder writes it
  ['speech.mp4', 'mp4', 2.694], // its picture lasts 4 s: the sound track is what is measured
  ['speech.mpeg', 'mpeg-ps', 2.592], // MPEG-1 video with MPEG audio
  ['speech.ogg', 'ogg', 2.566], // Vorbis
  ['speech-opus.ogg', 'ogg', 2.566],
  ['speech.oga', 'ogg', 1], // FLAC in Ogg
  ['speech.flac', 'flac', 1],
  ['speech.webm', 'matroska', 2.574],
  ['speech-live.webm', 'matroska', 2.581], // no Duration, a segment of unknown size
];

/** A deterministic byte source, so a failing case can be replayed. */
function random(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1_664_525) + 1_013_904_223) >>> 0;
    return s / 2 ** 32;
  };
}

/** Every position of `needle` in `file`. */
function positions(file: Buffer, needle: Buffer | string): number[] {
  const found: number[] = [];
  for (let at = file.indexOf(needle); at >= 0; at = file.indexOf(needle, at + 1)) found.push(at);
  return found;
}

describe('the duration of an uploaded audio file, read from its headers', () => {
  it.each(MEASURED)('%s is measured (%s, %d s)', (name, container, seconds) => {
    expect(audioDuration(fixture(name))).toEqual({ container, seconds });
  });

  it('a WAV is measured by its data chunk, also when a recorder left its size unset', () => {
    expect(audioDuration(silentWav(2))).toEqual({ container: 'wav', seconds: 2 });
    const streamed = silentWav(3);
    streamed.writeUInt32LE(0xffff_ffff, 40);
    expect(audioDuration(streamed)?.seconds).toBe(3);
  });

  it('an mp3 behind an ID3v2 tag (cover art included) is measured from its frames', () => {
    const art = Buffer.alloc(40_000, 0xff); // sync-looking bytes inside the tag must be skipped
    const header = Buffer.from('ID3\x04\x00\x00\0\0\0\0', 'latin1');
    header.set(
      [(art.length >> 21) & 0x7f, (art.length >> 14) & 0x7f, (art.length >> 7) & 0x7f, art.length & 0x7f],
      6,
    );
    expect(audioDuration(Buffer.concat([header, art, fixture('speech.mp3')]))?.seconds).toBe(2.736);
  });

  describe('a header that claims less audio than the file carries does not lower it', () => {
    it('mp3: a Xing header counting one frame', () => {
      const mp3 = Buffer.from(fixture('speech.mp3'));
      const [xing] = [...positions(mp3, 'Xing'), ...positions(mp3, 'Info')];
      expect(xing).toBeDefined();
      expect(mp3.readUInt32BE(xing! + 4) & 1).toBe(1); // the frame count is present
      mp3.writeUInt32BE(1, xing! + 8);
      expect(audioDuration(mp3)?.seconds).toBe(2.736);
    });

    it('FLAC: a STREAMINFO saying one sample, or 0 (unknown)', () => {
      for (const total of [1, 0]) {
        const flac = Buffer.from(fixture('speech.flac'));
        flac[8 + 13] = flac[8 + 13]! & 0xf0;
        flac.writeUInt32BE(total, 8 + 14);
        expect([total, audioDuration(flac)?.seconds]).toEqual([total, 1]);
      }
    });

    it('mp4: a media header saying one tick', () => {
      const m4a = Buffer.from(fixture('speech.m4a'));
      for (const at of positions(m4a, 'mdhd')) m4a.writeUInt32BE(1, at + 4 + 16);
      expect(audioDuration(m4a)?.seconds).toBe(2.694);
    });

    it('WebM: a Duration of one millisecond; clusters of unknown size, as a live recording has', () => {
      const webm = Buffer.from(fixture('speech.webm'));
      const [duration] = positions(webm, Buffer.from([0x44, 0x89, 0x88]));
      webm.writeDoubleBE(1, duration! + 3);
      expect(audioDuration(webm)?.seconds).toBe(2.581);
      const live = Buffer.from(fixture('speech-live.webm'));
      const clusters = positions(live, Buffer.from([0x1f, 0x43, 0xb6, 0x75]));
      expect(clusters.length).toBeGreaterThan(0);
      for (const at of clusters) {
        expect(live[at + 4]! & 0xc0).toBe(0x40); // a 2-byte size...
        live.writeUInt16BE(0x7fff, at + 4); // ...made unknown
      }
      expect(audioDuration(live)?.seconds).toBe(2.581);
    });

    it('Ogg: granule positions saying nothing has been played', () => {
      const measured = ['speech-opus.ogg', 'speech.ogg'].map((name) => {
        const ogg = Buffer.from(fixture(name));
        for (const at of positions(ogg, 'OggS'))
          if (ogg.readInt32LE(at + 6) !== -1) ogg.fill(0, at + 6, at + 14);
        return audioDuration(ogg)?.seconds;
      });
      // Opus packets say their own length (the last granule no longer trims the end); Vorbis packets
      // hold at least half a short block each (here most of them are short)
      expect(measured).toEqual([2.574, 2.56]);
    });
  });

  describe('what is not audio in a supported format has no duration', () => {
    const next = random(42);
    const noise = Buffer.from(Array.from({ length: 200_000 }, () => Math.floor(next() * 256)));
    const cases: Array<[string, Buffer]> = [
      ['nothing', Buffer.alloc(0)],
      ['zeros', Buffer.alloc(32_044)],
      ['text', Buffer.from('not audio at all, just a file named speech.mp3\n'.repeat(100))],
      ['noise', noise],
      ['a PNG', Buffer.concat([Buffer.from('\x89PNG\r\n\x1a\n', 'latin1'), noise.subarray(0, 5000)])],
      ['a RIFF without data', silentWav(1).subarray(0, 36)],
      ['an AVI', Buffer.concat([Buffer.from('RIFF\0\0\0\0AVI LIST', 'latin1'), noise.subarray(0, 5000)])],
      ['a FLAC marker alone', Buffer.from('fLaC', 'latin1')],
      ['an m4a cut before its moov box', fixture('speech.m4a').subarray(0, 3000)],
      ['a WebM cut inside its header', fixture('speech.webm').subarray(0, 40)],
      ['a few mp3 frames lost in noise', Buffer.concat([fixture('speech.mp3').subarray(0, 2000), noise])],
    ];
    it.each(cases)('%s', (_name, file) => {
      expect(audioDuration(file)).toBeNull();
    });
  });

  it('a damaged file never throws: cut anywhere or with bytes changed, it has a plausible duration or none', () => {
    const next = random(7);
    for (const [name] of MEASURED) {
      const file = fixture(name);
      for (let i = 0; i < 60; i++) {
        const damaged = Buffer.from(file.subarray(0, Math.floor(next() * file.length)));
        if (i % 2)
          for (let j = 0; j < 1 + i; j++)
            damaged[Math.floor(next() * damaged.length)] = Math.floor(next() * 256);
        const measured = audioDuration(damaged);
        if (measured !== null) expect(measured.seconds).toBeLessThanOrEqual(7 * 24 * 3600);
      }
    }
  });
});
