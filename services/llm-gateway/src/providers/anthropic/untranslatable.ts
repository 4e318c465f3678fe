/** A request that cannot be said in Anthropic's terms (the adapter turns it into a ProviderError). */
export class UntranslatableRequest extends Error {}
