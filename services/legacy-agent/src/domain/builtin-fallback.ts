/**
 * What the built-in fallback says when an assistant has no fallback intent of its own, in the conversation's
 * language: the web chat speaks the assistant's language (its own strings in these seven), so its answer must
 * too. Other languages get English. `LEGACY_BUILTIN_FALLBACK_TEXT`, when an operator sets it, is said in every one.
 */
const BUILTIN_FALLBACK: Readonly<Record<string, string>> = {
  en: "Sorry, I didn't get that. Could you say it another way?",
  fr: "Désolé, je n'ai pas compris. Pouvez-vous le dire autrement ?",
  de: 'Entschuldigung, das habe ich nicht verstanden. Können Sie es anders sagen?',
  es: 'Lo siento, no lo he entendido. ¿Puede decirlo de otra manera?',
  it: 'Mi dispiace, non ho capito. Può dirlo in un altro modo?',
  pt: 'Desculpe, não entendi. Pode dizer de outra forma?',
  nl: 'Sorry, dat heb ik niet begrepen. Kunt u het anders zeggen?',
};

/** The built-in fallback's text for `lang` (`fr`, `fr-CA`…), or the operator's own when configured. */
export function builtinFallbackText(lang: string, configured: string | undefined): string {
  if (configured !== undefined) return configured;
  const primary = lang.toLowerCase().split(/[-_]/)[0] ?? '';
  return Object.hasOwn(BUILTIN_FALLBACK, primary) ? BUILTIN_FALLBACK[primary]! : BUILTIN_FALLBACK.en!;
}
