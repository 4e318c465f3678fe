import { AppError } from '@platform/kernel';
import type { Router } from 'express';
import type { CatalogueModel } from '../catalogue/catalogue';
import type { PlatformDefaults } from '../catalogue/model-entry';
import { authorizeInference, type GatewayContext } from '../inference/gateway-context';
import { apiKeyIdOf, resolveModel } from '../inference/governance';
import type { OrgGatewaySettings } from '../quota/org-settings';

const CONCERNS = {
  completions: 'completion',
  embeddings: 'embeddings',
  image_generation: 'image_generation',
  audio_transcription: 'audio_transcription',
  audio_speech: 'audio_speech',
} as const;

/**
 * The model a request of one concern without `model` goes to, by the same resolution as the request
 * itself (`resolveModel`): the organization's default, else the platform's, with its soft downgrade.
 * Null when that request would be refused (an organization default that is gone, of another type, or
 * not allowed), so this answer never names a model the request would not use.
 */
export function resolvedDefault(
  ctx: GatewayContext,
  settings: OrgGatewaySettings,
  concern: keyof PlatformDefaults,
  /** the calling organization API key, whose own allowed models narrow the organization's */
  apiKeyId: string | null,
): { model: CatalogueModel; source: 'org' | 'platform'; downgradedFrom: string | null } | null {
  try {
    const { model, downgradedFrom } = resolveModel(undefined, CONCERNS[concern], settings, ctx.catalogue, {
      apiKeyId,
    });
    const source = settings.models.defaults[concern] === undefined ? 'platform' : 'org';
    return { model, source, downgradedFrom };
  } catch (err) {
    if (err instanceof AppError) return null;
    throw err;
  }
}

/** `GET /v1/defaults`: the resolved default model per concern, the platform's merged with the organization's. */
export function mountDefaults(router: Router, ctx: GatewayContext): void {
  router.get('/v1/defaults', async (req, res) => {
    const { principal, orgSlug } = authorizeInference(req);
    const settings = await ctx.orgSettings.get(orgSlug);
    const out: Record<string, unknown> = {};
    for (const concern of Object.keys(CONCERNS) as Array<keyof PlatformDefaults>) {
      const found = resolvedDefault(ctx, settings, concern, apiKeyIdOf(principal));
      if (!found) {
        out[concern] = null;
        continue;
      }
      const { model, source, downgradedFrom } = found;
      out[concern] = {
        model_id: model.model_id,
        source,
        ...(downgradedFrom ? { downgraded_from: downgradedFrom } : {}),
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
