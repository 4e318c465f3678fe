import type { ProviderCall } from './types';

/**
 * How a deployment reshapes the request body before its provider receives it (`provider_config`'s
 * `parameter_aliases` and `exclude_parameters`, decision 0119): a provider that renamed a parameter
 * (`max_tokens` → `max_completion_tokens`) or refuses one (`top_p`) is served without the clients changing.
 */
export interface RequestShape {
  /** members renamed, `[from, to]`: the value moves; a `to` the client sent itself is kept */
  readonly aliases: ReadonlyArray<readonly [string, string]>;
  /** members dropped */
  readonly exclude: ReadonlySet<string>;
  /** false when `stream` is excluded: the provider is called without streaming, and the gateway streams its answer */
  readonly streams: boolean;
}

/** The shape of a deployment's config, or undefined when it changes nothing (the hot path then copies nothing). */
export function requestShapeOf(config: {
  parameter_aliases?: Record<string, string>;
  exclude_parameters?: string[];
}): RequestShape | undefined {
  const aliases = Object.entries(config.parameter_aliases ?? {});
  const exclude = new Set(config.exclude_parameters ?? []);
  if (aliases.length === 0 && exclude.size === 0) return undefined;
  return { aliases, exclude, streams: !exclude.has('stream') };
}

/** The body as the call's deployment wants it: renamed, then without the excluded members. */
export function shapeBody<B extends object>(call: Pick<ProviderCall, 'shape'>, body: B): B {
  const shape = call.shape;
  if (!shape) return body;
  const out = { ...body } as Record<string, unknown>;
  for (const [from, to] of shape.aliases) {
    if (!Object.hasOwn(out, from)) continue;
    if (!Object.hasOwn(out, to)) out[to] = out[from];
    delete out[from];
  }
  for (const name of shape.exclude) delete out[name];
  return out as B;
}
