import { modelEntry } from './support';

// The simulator's media models as the tests of images and transcriptions add them to the gateway file.

/** `sim/image`: the simulator's image model, $0.04 an image. */
export const SIM_IMAGE_MODEL = modelEntry(
  'sim/image',
  'image_generation',
  { provider: 'sim', model: 'image-sim' },
  { per_image: 0.04 },
);

/** `sim/whisper`: the simulator's transcription model, $0.006 an audio minute. */
export const SIM_WHISPER_MODEL = modelEntry(
  'sim/whisper',
  'audio_transcription',
  { provider: 'sim', model: 'whisper-sim' },
  { per_audio_minute: 0.006 },
);
