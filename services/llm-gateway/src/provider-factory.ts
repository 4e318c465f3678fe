import type { AdapterFactory } from './catalogue/catalogue';

/** The provider layer's adapter factory (src/providers), behind the catalogue's port. */
export const defaultAdapterFactory =
  (_deps: { fetch?: typeof fetch }): AdapterFactory =>
  (spec) => {
    throw new Error(
      `no adapter for provider ${spec.name} (${spec.type}): the provider layer is not merged yet`,
    );
  };
