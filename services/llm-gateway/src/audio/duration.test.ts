import { readFileSync } from 'node:fs';
import path from 'node:path';
import { deflateSync } from 'node:zlib';
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
  ['speech-opus-fragmented.mp4', 'mp4', 2.573], // Opus in MP4, as Chrome's MediaRecorder writes it
  ['speech-opus.mp4', 'mp4', 2.573],
  ['speech-mp3.mp4', 'mp4', 2.635], // MPEG audio in MP4 (16 kHz)
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

/** Where each frame of the mp3 fixture starts: MPEG-2.5 layer III at 8 kHz, 9 bytes a frame per kbit/s. */
function mp3Frames(mp3: Buffer): number[] {
  const kbps = [0, 8, 16, 24, 32, 40, 48, 56, 64];
  const frames: number[] = [];
  for (let at = mp3.indexOf(Buffer.from([0xff, 0xe3])); at + 4 <= mp3.length; ) {
    frames.push(at);
    at += 9 * kbps[mp3[at + 2]! >> 4]! + ((mp3[at + 2]! >> 1) & 1);
  }
  return frames;
}

/** Edits an mp4 so that every sample lasts one tick (`stts`, `trex`, `tfhd`, `trun`) and so does its `mdhd`. */
function everySampleOneTick(mp4: Buffer): void {
  for (const at of positions(mp4, 'mdhd')) mp4.writeUInt32BE(1, at + 4 + 16);
  for (const at of positions(mp4, 'stts'))
    for (let i = 0; i < mp4.readUInt32BE(at + 8); i++) mp4.writeUInt32BE(1, at + 16 + i * 8);
  for (const at of positions(mp4, 'trex')) mp4.writeUInt32BE(1, at + 16);
  for (const at of positions(mp4, 'tfhd')) {
    const flags = mp4.readUIntBE(at + 5, 3);
    if (flags & 0x08) mp4.writeUInt32BE(1, at + 12 + (flags & 0x01 ? 8 : 0) + (flags & 0x02 ? 4 : 0));
  }
  for (const at of positions(mp4, 'trun')) {
    const flags = mp4.readUIntBE(at + 5, 3);
    if (!(flags & 0x100)) continue;
    const stride = 4 * (1 + ((flags >> 9) & 1) + ((flags >> 10) & 1) + ((flags >> 11) & 1));
    const first = at + 12 + (flags & 0x01 ? 4 : 0) + (flags & 0x04 ? 4 : 0);
    for (let i = 0; i < mp4.readUInt32BE(at + 8); i++) mp4.writeUInt32BE(1, first + i * stride);
  }
}

/** The packets of an Ogg file, in order (its first two are an Opus stream's headers). */
function oggPackets(ogg: Buffer): Buffer[] {
  const packets: Buffer[] = [];
  let parts: Buffer[] = [];
  for (let at = 0; at + 27 <= ogg.length; ) {
    const segments = ogg[at + 26]!;
    let body = at + 27 + segments;
    for (let i = 0; i < segments; i++) {
      const lace = ogg[at + 27 + i]!;
      parts.push(ogg.subarray(body, body + lace));
      body += lace;
      if (lace < 255) {
        packets.push(Buffer.concat(parts));
        parts = [];
      }
    }
    at = body;
  }
  return packets;
}

/** Big-endian 32-bit words. */
const u32 = (...values: number[]) =>
  Buffer.from(values.flatMap((v) => [v >>> 24, (v >> 16) & 255, (v >> 8) & 255, v & 255]));

/** An ISO BMFF box of 32-bit size. */
function box(type: string, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  return Buffer.concat([u32(8 + body.length), Buffer.from(type, 'latin1'), body]);
}

/** An EBML element of 8-byte size. */
function element(id: number[], ...body: Buffer[]): Buffer {
  const content = Buffer.concat(body);
  const size = Buffer.alloc(8);
  size[0] = 1;
  size.writeUIntBE(content.length, 2, 6);
  return Buffer.concat([Buffer.from(id), size, content]);
}

/**
 * A WebM of the Ogg Opus fixture's packets, four to a SimpleBlock (the last one alone, unlaced), every block
 * at timestamp 0 and no Duration. Fixed-size lacing needs frames of one size: each packet is made 64 bytes
 * with Opus's own padding (code 3, one frame: the same 20 ms).
 */
function lacedWebm(lacing: 'xiph' | 'ebml' | 'fixed'): Buffer {
  const [head, , ...packets] = oggPackets(fixture('speech-opus.ogg'));
  const padded = (p: Buffer) => {
    const padding = 64 - 3 - (p.length - 1);
    return Buffer.concat([
      Buffer.from([(p[0]! & 0xfc) | 3, 0x41, padding]),
      p.subarray(1),
      Buffer.alloc(padding),
    ]);
  };
  const blocks: Buffer[] = [];
  for (let i = 0; i < packets.length; i += 4) {
    const group = packets.slice(i, i + 4).map((p) => (lacing === 'fixed' ? padded(p) : p));
    if (group.length === 1) {
      blocks.push(element([0xa3], Buffer.from([0x81, 0, 0, 0x80]), group[0]!));
      continue;
    }
    const sizes = group.slice(0, -1).map((p) => p.length);
    const header =
      lacing === 'xiph'
        ? sizes.flatMap((s) => [...Array<number>(Math.floor(s / 255)).fill(255), s % 255])
        : lacing === 'ebml' // the first size, then differences (2-byte signed: biased by 2^13 - 1)
          ? sizes.flatMap((s, j) => {
              const v = j === 0 ? s : s - sizes[j - 1]! + 8191;
              return [0x40 | (v >> 8), v & 0xff];
            })
          : [];
    const flags = 0x80 | ({ xiph: 1, fixed: 2, ebml: 3 }[lacing] << 1);
    blocks.push(element([0xa3], Buffer.from([0x81, 0, 0, flags, group.length - 1, ...header]), ...group));
  }
  const uint = (id: number[], v: number) => element(id, Buffer.from([v]));
  const track = element(
    [0xae],
    uint([0xd7], 1),
    uint([0x83], 2),
    element([0x86], Buffer.from('A_OPUS')),
    element([0x63, 0xa2], head!),
    element([0xe1], uint([0x9f], 1)),
  );
  return Buffer.concat([
    element([0x1a, 0x45, 0xdf, 0xa3], element([0x42, 0x82], Buffer.from('webm'))),
    Buffer.from([0x18, 0x53, 0x80, 0x67, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]), // a Segment of unknown size
    element([0x16, 0x54, 0xae, 0x6b], track),
    element([0x1f, 0x43, 0xb6, 0x75], uint([0xe7], 0), ...blocks),
  ]);
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

  it('a QuickTime sound track, its data handler (dhlr) after its media handler, is measured (not refused)', () => {
    // as ffmpeg's mov muxer writes it: `minf` holds a `hdlr` of component type `dhlr`, subtype `url `; here written
    // over the m4a's `dinf` (of the same size, so no box moves)
    const mov = Buffer.from(fixture('speech.m4a'));
    const dinf = mov.indexOf('dinf') - 4;
    mov.write('hdlr', dinf + 4, 'latin1');
    mov.writeUInt32BE(0, dinf + 8);
    mov.write('dhlrurl ', dinf + 12, 'latin1');
    expect(audioDuration(mov)).toEqual({ container: 'mp4', seconds: 2.694 });
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

    it('WAV: a byte rate above what its samples fill, or the audio split over several data chunks', () => {
      const wav = silentWav(10); // 16 kHz mono 16-bit: 32,000 bytes a second
      wav.writeUInt32LE(0xffff_ffff, 28); // decoders go by rate, channels and sample size
      expect(audioDuration(wav)?.seconds).toBe(10);
      // a first data chunk of 2 bytes, the rest in a second one: decoders play both
      const split = Buffer.concat([
        silentWav(0).subarray(0, 40),
        Buffer.from([2, 0, 0, 0, 0, 0]),
        Buffer.from('data', 'latin1'),
        Buffer.alloc(4),
        Buffer.alloc(320_000),
      ]);
      split.writeUInt32LE(320_000, 50);
      expect(audioDuration(split)?.seconds).toBe(10);
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

  describe('AAC, Opus and MPEG audio are priced by their own frames, whatever the timing fields say', () => {
    // each of these edits priced its file at its bytes' floor (0.04-0.13 s) or at half its frames before; the
    // seconds are what ffmpeg 5.1 decodes from the edited file, to a frame (its priming and padding aside)
    it('mp4: a media header timescale of 2^31 - 1 ticks a second (21 of 22 AAC access units of 1,024 samples)', () => {
      const measured = ['speech.m4a', 'speech-fragmented.m4a', 'speech.mp4'].map((name) => {
        const mp4 = Buffer.from(fixture(name));
        for (const at of positions(mp4, 'mdhd')) mp4.writeUInt32BE(0x7fff_ffff, at + 4 + 12);
        return audioDuration(mp4)?.seconds;
      });
      // ffmpeg plays 21,504 samples of the m4a and the mp4 (2.688 s: the edit list drops the priming), all
      // 22,528 of the fragmented one (2.816 s)
      expect(measured).toEqual([2.688, 2.688, 2.688]);
    });

    it('mp4: compact sample sizes (stz2) count the access units as stsz does', () => {
      const m4a = fixture('speech.m4a');
      const at = m4a.indexOf('stsz') - 4;
      const size = m4a.readUInt32BE(at);
      const count = m4a.readUInt32BE(at + 16);
      // 16-bit sizes, and a free box where the rest of the stsz was (no other box moves)
      const stz2 = Buffer.alloc(20 + count * 2);
      stz2.writeUInt32BE(stz2.length, 0);
      stz2.write('stz2', 4, 'latin1');
      stz2[15] = 16;
      stz2.writeUInt32BE(count, 16);
      for (let i = 0; i < count; i++) stz2.writeUInt16BE(m4a.readUInt32BE(at + 20 + i * 4), 20 + i * 2);
      const free = Buffer.alloc(size - stz2.length);
      free.writeUInt32BE(free.length, 0);
      free.write('free', 4, 'latin1');
      const edited = Buffer.concat([m4a.subarray(0, at), stz2, free, m4a.subarray(at + size)]);
      expect(audioDuration(edited)?.seconds).toBe(2.694);
      for (const mdhd of positions(edited, 'mdhd')) edited.writeUInt32BE(0x7fff_ffff, mdhd + 4 + 12);
      expect(audioDuration(edited)?.seconds).toBe(2.688); // ffmpeg: 21,504 samples
    });

    it('mp4: Opus and MPEG audio samples say their own length (a media header timescale of 2^31 - 1)', () => {
      const measured = ['speech-opus-fragmented.mp4', 'speech-opus.mp4', 'speech-mp3.mp4'].map((name) => {
        const mp4 = Buffer.from(fixture(name));
        for (const at of positions(mp4, 'mdhd')) mp4.writeUInt32BE(0x7fff_ffff, at + 4 + 12);
        return audioDuration(mp4)?.seconds;
      });
      // every sample but the last (ffmpeg: 2.5735, 2.579 and 2.595 s); before, their bytes' floor: 0.04-0.08 s
      expect(measured).toEqual([2.56, 2.56, 2.628]);
    });

    it('mp4: every sample lasting one tick (stts, trun, their defaults) and a media header of one tick', () => {
      const measured = ['speech.m4a', 'speech-fragmented.m4a'].map((name) => {
        const mp4 = Buffer.from(fixture(name));
        everySampleOneTick(mp4);
        return audioDuration(mp4)?.seconds;
      });
      expect(measured).toEqual([2.688, 2.688]);
    });

    it('mp4: HE-AAC plays twice the samples at twice the rate, the same seconds (the core rate counts)', () => {
      // the AudioSpecificConfig made explicit SBR: object type 5, 8 kHz core, 16 kHz out, then AAC LC
      const m4a = Buffer.from(fixture('speech.m4a'));
      const config = m4a.indexOf(Buffer.from('158856e500', 'hex'));
      Buffer.from('2d8c080000', 'hex').copy(m4a, config);
      expect(audioDuration(m4a)?.seconds).toBe(2.694); // an honest file: as before
      for (const at of positions(m4a, 'mdhd')) m4a.writeUInt32BE(0x7fff_ffff, at + 4 + 12);
      expect(audioDuration(m4a)?.seconds).toBe(2.688); // ffmpeg: 43,008 samples at 16 kHz
    });

    it('mp4: a second track fragment with no base offset starts where the first one’s samples ended, not at the movie fragment', () => {
      const opus = fixture('speech-opus-fragmented.mp4');
      const moof = opus.indexOf('moof') - 4;
      const run = opus.indexOf('trun') - 4;
      // the fixture's one run of 129 packets of 20 ms split into two track fragments of one movie fragment, the
      // first packet and the rest, neither with a base offset nor default-base-is-moof; their durations kept, or
      // each made one tick
      const samples = Array.from({ length: opus.readUInt32BE(run + 12) }, (_, i) => [
        opus.readUInt32BE(run + 20 + i * 8),
        opus.readUInt32BE(run + 24 + i * 8),
      ]);
      const sizes = samples.map(([, size]) => size!);
      const at = moof + opus.readUInt32BE(run + 16);
      const first = opus.subarray(at, at + sizes[0]!);
      const rest = opus.subarray(at + sizes[0]!, at + sizes.reduce((a, b) => a + b));
      const file = (oneTick: boolean, decoys: number, gap: number) => {
        const tfhd = box('tfhd', u32(0x38, 1, oneTick ? 1 : 160, 0, 0x0200_0000));
        const traf = (offset: number, part: number[][]) =>
          box(
            'traf',
            tfhd,
            box('trun', u32(0x301, part.length, offset), ...part.map(([d, s]) => u32(oneTick ? 1 : d!, s!))),
          );
        const fragment = (a: number, b: number) =>
          box('moof', box('mfhd', u32(0, 1)), traf(a, samples.slice(0, 1)), traf(b, samples.slice(1)));
        const head = fragment(0, 0).length + 8; // the movie fragment and the media data box's header
        // the first fragment's data after `decoys` bytes of TOC 0x80 (a 2.5 ms packet), the second's `gap` bytes
        // after the first's
        return Buffer.concat([
          opus.subarray(0, moof),
          fragment(head + decoys, gap),
          box('mdat', Buffer.alloc(decoys, 0x80), first, Buffer.alloc(gap), rest),
        ]);
      };
      // as a muxer following ISO BMFF writes it: before, the second fragment's packets were read from the movie
      // fragment's own bytes and the file priced at 2.83 s
      expect(audioDuration(file(false, 0, 0))?.seconds).toBe(2.573);
      // the second fragment's packets put that far after the first's data, the movie fragment's size and the media
      // data box's header, with as many bytes of 0x80 where the parser looked (from the movie fragment), and every
      // sample lasting one tick: ffmpeg 5.1 decodes 123,528 samples (2.5735 s) of the packets; before, 2.5 ms a
      // packet was read, 0.338 s
      const moofSize = file(false, 0, 0).indexOf('mdat') - 4 - moof;
      expect(audioDuration(file(true, rest.length, moofSize + 8))?.seconds).toBe(2.56);
    });

    it('Matroska: a TimestampScale of 1 ns instead of 1 ms (129 Opus packets of 20 ms)', () => {
      const measured = ['speech.webm', 'speech-live.webm'].map((name) => {
        const webm = Buffer.from(fixture(name));
        const [scale] = positions(webm, Buffer.from([0x2a, 0xd7, 0xb1, 0x83, 0x0f, 0x42, 0x40]));
        webm.writeUIntBE(1, scale! + 4, 3);
        return audioDuration(webm)?.seconds;
      });
      // every packet but the last: ffmpeg plays 2.566 s (the pre-skip and the last packet's padding dropped)
      expect(measured).toEqual([2.56, 2.56]);
    });

    it.each(['xiph', 'ebml', 'fixed'] as const)(
      'Matroska: Opus packets laced 4 to a block (%s lacing), every timestamp 0, no Duration',
      (lacing) => {
        // ffmpeg plays 2.5735 s of each (the OpusHead's pre-skip dropped)
        expect(audioDuration(lacedWebm(lacing))).toEqual({ container: 'matroska', seconds: 2.56 });
      },
    );

    it('Matroska: Opus packets whose first bytes the track strips (header stripping) are read with them put back', () => {
      const [head, , ...packets] = oggPackets(fixture('speech-opus.ogg')); // every packet's TOC is 0x08: one 20 ms frame
      const uint = (id: number[], v: number) => element(id, Buffer.from([v]));
      // the track's ContentEncoding: ContentCompAlgo 3, ContentCompSettings the bytes removed from every frame
      const webm = (
        stripped: number[],
        frame: (p: Buffer) => Buffer,
        spacing: number,
        tracksFirst = true,
        algorithm = 3,
      ) => {
        const encoding = element(
          [0x6d, 0x80],
          element(
            [0x62, 0x40],
            element(
              [0x50, 0x34],
              uint([0x42, 0x54], algorithm),
              element([0x42, 0x55], Buffer.from(stripped)),
            ),
          ),
        );
        const track = element(
          [0x16, 0x54, 0xae, 0x6b],
          element(
            [0xae],
            uint([0xd7], 1),
            uint([0x83], 2),
            element([0x86], Buffer.from('A_OPUS')),
            element([0x63, 0xa2], head!),
            encoding,
          ),
        );
        const blocks = packets.map((p, i) =>
          element([0xa3], Buffer.from([0x81, (i * spacing) >> 8, (i * spacing) & 255, 0x80]), frame(p)),
        );
        const cluster = element([0x1f, 0x43, 0xb6, 0x75], uint([0xe7], 0), ...blocks);
        return Buffer.concat([
          element([0x1a, 0x45, 0xdf, 0xa3], element([0x42, 0x82], Buffer.from('webm'))),
          Buffer.from([0x18, 0x53, 0x80, 0x67, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
          ...(tracksFirst ? [track, cluster] : [cluster, track]),
        ]);
      };
      // the TOC stripped, blocks 20 ms apart: before, each packet's second byte was read as its TOC (3.28 s)
      expect(audioDuration(webm([0x08], (p) => p.subarray(1), 20))?.seconds).toBe(2.58);
      // each packet made code 3 with padding (one frame: the same 20 ms), its TOC and frame count stripped, so that
      // the first byte stored is the padding's length, 0x80 (a 2.5 ms packet), and every timestamp 0: ffmpeg 5.1
      // decodes 123,528 samples (2.5735 s); before, 0.32 s
      const padded = (p: Buffer) => Buffer.concat([Buffer.from([0x80]), p.subarray(1), Buffer.alloc(0x80)]);
      expect(audioDuration(webm([0x0b, 0x41], padded, 0))?.seconds).toBe(2.56);
      // the same with its Tracks after its blocks, read before the track said what was stripped: refused
      expect(audioDuration(webm([0x0b, 0x41], padded, 0, false))).toBeNull();
      // frames compressed with zlib (ContentCompAlgo 0): their first byte (0x78) is no TOC, so they are refused
      expect(audioDuration(webm([], (p) => deflateSync(p), 20, true, 0))).toBeNull();
    });

    it('mp3: frames of a reserved emphasis from the 20th on (ffmpeg ignores the field and plays all 38)', () => {
      const mp3 = Buffer.from(fixture('speech.mp3'));
      for (const at of mp3Frames(mp3).slice(20)) mp3[at + 3] = (mp3[at + 3]! & 0xfc) | 2;
      expect(audioDuration(mp3)?.seconds).toBe(2.736);
    });

    it('mp3: free-format frames (bit rate index 0), from the 20th on or all of them', () => {
      const measured = [20, 1, 0].map((from) => {
        const mp3 = Buffer.from(fixture('speech.mp3'));
        for (const at of mp3Frames(mp3).slice(from)) mp3[at + 2] = mp3[at + 2]! & 0x0f;
        return audioDuration(mp3)?.seconds;
      });
      // the first frame is the Xing header's: free-format too, it is still skipped as silence
      expect(measured).toEqual([2.736, 2.736, 2.736]);
    });

    it('mp3: a free-format stream whose frames are padded by a byte now and then (44.1 kHz)', () => {
      // MPEG-1 layer III, mono, frames of 417 bytes and 418 with padding: 128 kbit/s, a rate no header names
      const frames = Array.from({ length: 100 }, (_, i) => {
        const frame = Buffer.alloc(417 + (i % 3 === 2 ? 1 : 0));
        frame.set([0xff, 0xfb, i % 3 === 2 ? 0x02 : 0x00, 0xc4]);
        return frame;
      });
      expect(audioDuration(Buffer.concat(frames))).toEqual({ container: 'mpeg-audio', seconds: 2.612 });
    });
  });

  describe('an edited timing field prices a file no lower than its audio bytes at its codec’s highest rate', () => {
    // lossy: 64,000 bytes a second; FLAC: twice 192 kHz of verbatim samples (768,000 for 16-bit mono);
    // AC-3: 80,000; DVD LPCM: 768,000 (floor.ts). Each of these edits priced its file at 0-0.01 s before.
    it('Ogg FLAC: granule positions saying nothing has been played', () => {
      const oga = Buffer.from(fixture('speech.oga'));
      for (const at of positions(oga, 'OggS'))
        if (oga.readInt32LE(at + 6) !== -1) oga.fill(0, at + 6, at + 14);
      expect(audioDuration(oga)?.seconds).toBe(0.015); // about 11,500 bytes of 16-bit mono FLAC packets
    });

    it('FLAC: a STREAMINFO sample rate of 1,048,575 Hz', () => {
      const flac = Buffer.from(fixture('speech.flac'));
      flac.writeUInt32BE(((flac.readUInt32BE(8 + 10) & 0xfff) | (0xfffff << 12)) >>> 0, 8 + 10);
      expect(audioDuration(flac)?.seconds).toBe(0.015); // 8,000 samples would be 0.008 s
    });

    it('MPEG-PS: AC-3 and LPCM packets whose timestamps are all the same', () => {
      // private stream 1, 100 packets of 2,000 bytes, each with PTS 0
      const programStream = (substream: number) => {
        const pack = Buffer.alloc(14);
        pack.writeUInt32BE(0x1ba, 0);
        pack[4] = 0x44; // MPEG-2
        pack[13] = 0xf8; // no stuffing
        const packet = Buffer.alloc(6 + 8 + 2000);
        packet.writeUInt32BE(0x1bd, 0);
        packet.writeUInt16BE(packet.length - 6, 4);
        packet.set([0x80, 0x80, 5, 0x21, 0, 1, 0, 1], 6); // a PTS of 0
        packet[14] = substream;
        return Buffer.concat([pack, ...Array.from({ length: 100 }, () => packet)]);
      };
      expect([0x80, 0xa0].map((substream) => audioDuration(programStream(substream)))).toEqual([
        { container: 'mpeg-ps', seconds: 2.5 }, // AC-3: 200,000 bytes / 80,000
        { container: 'mpeg-ps', seconds: 0.26 }, // LPCM: 200,000 bytes / 768,000
      ]);
    });
  });

  describe('a file of more tracks or streams than are measured is refused (the one left out could be the longest)', () => {
    it('Ogg: a 65th stream after 63 unknown ones and a 20 ms Opus one', () => {
      const page = (serial: number, flags: number, granule: number, packet: Buffer) => {
        const header = Buffer.alloc(28);
        header.write('OggS', 0, 'latin1');
        header[5] = flags;
        header.writeUInt32LE(granule, 6);
        header.writeUInt32LE(serial, 14);
        header[26] = 1; // one segment: the packet (under 255 bytes)
        header[27] = packet.length;
        return Buffer.concat([header, packet]);
      };
      const head = Buffer.concat([
        Buffer.from('OpusHead\x01\x01\0\0', 'latin1'),
        Buffer.from([0x80, 0xbb, 0, 0, 0, 0, 0]),
      ]);
      const speech = fixture('speech-opus.ogg');
      const second = speech.indexOf('OggS', 1);
      const ogg = Buffer.concat([
        ...Array.from({ length: 63 }, (_, i) => page(1000 + i, 2, 0, Buffer.from('no codec we know'))),
        page(1, 2, 0, head),
        speech.subarray(0, second), // the speech's first page: its OpusHead
        page(1, 0, 0, Buffer.from('OpusTags\0\0\0\0\0\0\0\0', 'latin1')),
        page(1, 4, 960, Buffer.from([0x08, 0])), // 20 ms
        speech.subarray(second),
      ]);
      expect(audioDuration(ogg)).toBeNull();
    });

    it('mp4: a 65th track after a 10 ms sound track and 63 empty ones', () => {
      const mdhd = Buffer.alloc(24);
      mdhd.writeUInt32BE(1000, 12); // timescale
      mdhd.writeUInt32BE(10, 16); // duration
      const hdlr = Buffer.alloc(25);
      hdlr.write('soun', 8, 'latin1');
      const short = box(
        'trak',
        box('tkhd', Buffer.alloc(84)),
        box('mdia', box('mdhd', mdhd), box('hdlr', hdlr)),
      );
      const m4a = fixture('speech.m4a');
      const at = m4a.indexOf('moov') - 4;
      const size = m4a.readUInt32BE(at);
      const moov = box(
        'moov',
        short,
        ...Array.from({ length: 63 }, () => box('trak')),
        m4a.subarray(at + 8, at + size),
      );
      expect(audioDuration(Buffer.concat([m4a.subarray(0, at), moov, m4a.subarray(at + size)]))).toBeNull();
    });

    it('Matroska: its track after 64 audio tracks of no blocks', () => {
      const live = fixture('speech-live.webm'); // no Duration, a segment of unknown size
      // the Tracks element (not the SeekHead's reference to it: SeekID, size 4, then the id)
      const at = positions(live, Buffer.from([0x16, 0x54, 0xae, 0x6b])).find((p) => live[p - 1] !== 0x84)!;
      const sizeLength = Math.clz32(live[at + 4]!) - 23;
      const size = live.readUIntBE(at + 4, sizeLength) - 2 ** (7 * sizeLength);
      // TrackEntry {TrackNumber n, TrackType 2 (audio)}
      const entries = Buffer.concat(
        Array.from({ length: 64 }, (_, i) => Buffer.from([0xae, 0x86, 0xd7, 0x81, 2 + i, 0x83, 0x81, 0x02])),
      );
      const header = Buffer.from([0x16, 0x54, 0xae, 0x6b, 0x01, 0, 0, 0, 0, 0, 0, 0]);
      header.writeUIntBE(size + entries.length, 6, 6);
      const webm = Buffer.concat([live.subarray(0, at), header, entries, live.subarray(at + 4 + sizeLength)]);
      expect(audioDuration(webm)).toBeNull();
    });
  });

  describe('what is not audio in a supported format has no duration', () => {
    const next = random(42);
    const noise = Buffer.from(Array.from({ length: 200_000 }, () => Math.floor(next() * 256)));
    /** `file` with `header` written at random places, about every 300 bytes */
    const strewn = (file: Buffer, header: number[]) => {
      const copy = Buffer.from(file);
      for (let at = 0; at + 4 <= copy.length; at += 1 + Math.floor(next() * 600)) copy.set(header, at);
      return copy;
    };
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
      ['noise strewn with free-format MPEG audio headers', strewn(noise, [0xff, 0xfb, 0x00, 0xc4])],
      ['noise strewn with headers of a reserved emphasis', strewn(noise, [0xff, 0xfb, 0x90, 0xc6])],
      [
        'free-format headers closer together than any frame can be',
        Buffer.concat(
          Array.from({ length: 400 }, () => Buffer.from([0xff, 0xfb, 0x00, 0xc4, ...Array(60).fill(0)])),
        ),
      ],
    ];
    it.each(cases)('%s', (_name, file) => {
      expect(audioDuration(file)).toBeNull();
    });
  });

  it('an mp4 whose Opus samples are the same bytes read over and over is refused (an honest file’s do not overlap)', () => {
    const opus = fixture('speech-opus-fragmented.mp4');
    const moof = opus.indexOf('moof') - 4;
    // after the fixture's moov (its Opus track, id 1): 1,000 runs of a million 8-byte samples, each run from the
    // movie fragment's start (default-base-is-moof), no durations
    const runs = Array.from({ length: 1000 }, () =>
      box('traf', box('tfhd', u32(0x02_0010, 1, 8)), box('trun', u32(0x1, 1_000_000, 0))),
    );
    const file = Buffer.concat([opus.subarray(0, moof), box('moof', ...runs), Buffer.alloc(100_000, 0x08)]);
    expect(audioDuration(file)).toBeNull();
  });

  describe('a second track of the same id or number does not hide the first one’s audio (decoders give it the samples)', () => {
    // each was priced at 0 s, where ffmpeg 5.1 plays the audio track's 2.58 s
    it('mp4: a video track of the sound track’s id, after it, does not take its fragments', () => {
      const measured = ['speech-opus-fragmented.mp4', 'speech-fragmented.m4a'].map((name) => {
        const mp4 = fixture(name);
        const moov = mp4.indexOf('moov') - 4;
        const trak = mp4.indexOf('trak') - 4;
        const copy = Buffer.from(mp4.subarray(trak, trak + mp4.readUInt32BE(trak)));
        copy.write('vide', copy.indexOf('hdlr') + 12, 'latin1');
        const end = moov + mp4.readUInt32BE(moov);
        const file = Buffer.concat([mp4.subarray(0, end), copy, mp4.subarray(end)]);
        file.writeUInt32BE(mp4.readUInt32BE(moov) + copy.length, moov);
        return audioDuration(file)?.seconds;
      });
      expect(measured).toEqual([2.573, 2.694]);
    });

    it('webm: a video track entry of the Opus track’s number, beside a one-packet audio track', () => {
      const [head, , ...packets] = oggPackets(fixture('speech-opus.ogg'));
      const uint = (id: number[], v: number) => element(id, Buffer.from([v]));
      const track = (n: number, type: number, codec: string, ...rest: Buffer[]) =>
        element([0xae], uint([0xd7], n), uint([0x83], type), element([0x86], Buffer.from(codec)), ...rest);
      const block = (n: number, ms: number, p: Buffer) =>
        element([0xa3], Buffer.from([0x80 | n, ms >> 8, ms & 255, 0x80]), p);
      const webm = Buffer.concat([
        element([0x1a, 0x45, 0xdf, 0xa3], element([0x42, 0x82], Buffer.from('webm'))),
        Buffer.from([0x18, 0x53, 0x80, 0x67, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
        element(
          [0x16, 0x54, 0xae, 0x6b],
          track(1, 2, 'A_OPUS', element([0x63, 0xa2], head!)),
          track(1, 1, 'V_VP8'),
          track(2, 2, 'A_OPUS', element([0x63, 0xa2], head!)),
        ),
        element(
          [0x1f, 0x43, 0xb6, 0x75],
          uint([0xe7], 0),
          ...packets.map((p, i) => block(1, i * 20, p)),
          block(2, 0, packets[0]!),
        ),
      ]);
      expect(audioDuration(webm)).toEqual({ container: 'matroska', seconds: 2.58 });
    });
  });

  it('an mp4 of many fragment runs placed past its end is read at once (their samples are not walked one by one)', async () => {
    const opus = fixture('speech-opus-fragmented.mp4');
    const moof = opus.indexOf('moof') - 4;
    // after the fixture's moov: one track fragment at base offset 2^40 (1-byte samples), then 20,000 runs of 2^32 - 1
    // samples each; walked a sample at a time up to the file's length, they held the thread for a minute (25 MiB of
    // them: days)
    const tfhd = box('tfhd', u32(0x00_0011, 1, 0x100, 0, 1));
    const runs = Array.from({ length: 20_000 }, () => box('trun', u32(0, 0xffff_ffff)));
    const file = Buffer.concat([opus.subarray(0, moof), box('moof', box('traf', tfhd, ...runs))]);
    expect(audioDuration(file)?.container).toBe('mp4');
    // the measurement is synchronous: had it held the thread past the test's timeout (30 s), that timeout's timer is
    // due before this one, and fails the test
    await new Promise((resolve) => setTimeout(resolve, 0));
  });

  it('an MPEG program stream of many tiny audio packets is read without an object per packet', () => {
    // 9 bytes a packet: 25 MiB of them once held 2.9 million views of the file (300 MB of heap)
    const ps = Buffer.alloc(12 + 9 * 100_000);
    ps.writeUInt32BE(0x1ba, 0);
    ps[4] = 0x21; // an MPEG-1 pack header
    for (let at = 12; at < ps.length; at += 9) {
      ps.writeUInt32BE(0x1c0, at);
      ps.writeUInt16BE(3, at + 4);
      ps[at + 6] = 0x80;
    }
    const views = jest.spyOn(Buffer.prototype, 'subarray');
    try {
      expect(audioDuration(ps)).toBeNull();
      expect(views.mock.calls.length).toBeLessThan(10);
    } finally {
      views.mockRestore();
    }
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
