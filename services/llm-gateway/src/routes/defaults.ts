import type { Router } from 'express';
import type { CatalogueModel } from '../catalogue/catalogue';
import type { PlatformDefaults } from '../catalogue/model-entry';
import { authorizeInference, type GatewayContext } from '../inference/gateway-context';
import { isAllowed, visibleTo } from '../inference/governance';
import type { OrgGatewaySettings } from '../quota/org-settings';

const CONCERNS = {
  completions: 'completion',
  embeddings: 'embeddings',
  image_generation: 'image_generation',
  audio_transcription: 'audio_transcription',
  audio_speech: 'audio_speech',
} as const;

/**
 * The default model of one concern for an organization: its own default when that model is usable
 * (enabled, offered to it, allowed by its governance, of the right type), else the platform's.
 */
export function resolvedDefault(
  ctx: GatewayContext,
  settings: OrgGatewaySettings,
  concern: keyof PlatformDefaults,
): { model: CatalogueModel; source: 'org' | 'platform' } | null {
  const usable = (id: string | undefined) => {
    const m = id ? ctx.catalogue.get(id) : undefined;
    return m &&
      m.type === CONCERNS[concern] &&
      visibleTo(m, settings.orgSlug) &&
      isAllowed(m.model_id, settings)
      ? m
      : undefined;
  };
  const own = usable(settings.models.defaults[concern]);
  if (own) return { model: own, source: 'org' };
  const platform = usable(ctx.catalogue.platformDefault(concern));
  return platform ? { model: platform, source: 'platform' } : null;
}

/** `GET /v1/defaults`: the resolved default model per concern, the platform's merged with the organization's. */
export function mountDefaults(router: Router, ctx: GatewayContext): void {
  router.get('/v1/defaults', async (req, res) => {
    const { orgSlug } = authorizeInference(req);
    const settings = await ctx.orgSettings.get(orgSlug);
    const out: Record<string, unknown> = {};
    for (const concern of Object.keys(CONCERNS) as Array<keyof PlatformDefaults>) {
      const found = resolvedDefault(ctx, settings, concern);
      if (!found) {
        out[concern] = null;
        continue;
      }
      const { model, source } = found;
      out[concern] = {
        model_id: model.model_id,
        source,
        ...(model.display?.name ? { name: model.display.name } : {}),
        ...(concern === 'embeddings'
          ? {
              dimensions: model.dimensions ?? null,
              supported_dimensions: model.supported_dimensions ?? null,
            }
          : {}),
      };
    }
    res.json(out);
  });
}
