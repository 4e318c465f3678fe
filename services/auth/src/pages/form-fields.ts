import { NOT_TEXT, showsSomething } from '../routes/common';

/**
 * A form field as text: a string cut to `max` UTF-16 units, never between the two halves of a surrogate pair (a cut
 * there would leave a lone surrogate, not text); anything else is ''. Passwords are read this way too: nothing of
 * what a person typed is changed, only cut.
 */
export function formText(value: unknown, max = 256): string {
  if (typeof value !== 'string') return '';
  const cut = value.slice(0, max);
  const last = cut.charCodeAt(cut.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? cut.slice(0, -1) : cut;
}

/**
 * A name a person gives in a form, or an identity provider gives: text without control characters, bidirectional
 * overrides or lone surrogates (as the API's `displayName` refuses them), composed (NFC), then cut to `max` UTF-16
 * units (composing can lengthen a text: U+0958 becomes two units) before a letter rather than between it and its
 * marks, and trimmed; '' when what is left shows nothing (zero-width characters alone).
 */
export function formName(value: unknown, max: number): string {
  if (typeof value !== 'string') return '';
  const composed = value.replace(new RegExp(NOT_TEXT.source, 'gu'), '').normalize('NFC').trim();
  const cut = formText(composed, max);
  // a letter whose marks would be cut off goes with them (क़ is not क)
  const next = composed.codePointAt(cut.length);
  const whole =
    next !== undefined && /\p{M}/u.test(String.fromCodePoint(next)) ? cut.replace(/\P{M}\p{M}*$/u, '') : cut;
  const name = whole.trim();
  return showsSomething(name) ? name : '';
}
