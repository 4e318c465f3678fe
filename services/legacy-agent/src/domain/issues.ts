import { InvalidInput } from '@platform/kernel';
import { canonicalLanguage } from './language-tags';

export interface Issue {
  field: string;
  message: string;
}

/** The same 400 parseInput gives, for rules that need stored state (languages, entity names). */
export function throwIfIssues(issues: Issue[]): void {
  if (issues.length === 0) return;
  throw new InvalidInput(`Invalid body: ${issues.map((i) => `${i.field}: ${i.message}`).join('; ')}`, {
    code: 'INVALID_BODY',
    details: { issues },
  });
}

/**
 * Issues for every language key of a language-keyed map that the assistant does not speak. A key in another letter
 * case than a language it speaks is one stored beside that language's, with other content (`byCanonicalLanguage`):
 * its issue names both, so the one to keep is sent.
 */
export function languageIssues(
  field: string,
  map: Record<string, unknown> | undefined,
  languages: readonly string[],
): Issue[] {
  if (!map) return [];
  return Object.keys(map)
    .filter((lang) => !languages.includes(lang))
    .map((lang) => {
      const canonical = canonicalLanguage(lang);
      return {
        field: `${field}.${lang}`,
        message: languages.includes(canonical)
          ? `"${canonical}" and "${lang}" are the same language with different content: send ${field} with one of them`
          : `language ${lang} is not one of the assistant's languages (${languages.join(', ')})`,
      };
    });
}
