/**
 * Compose-file variable interpolation as the Compose Specification defines it: `$$` is a literal `$`;
 * `${VAR}` and `$VAR`; `${VAR:-default}` / `${VAR-default}` (when unset or empty / when unset);
 * `${VAR:?message}` / `${VAR?message}` (an error); `${VAR:+alt}` / `${VAR+alt}`. Values are
 * interpolated, keys are not.
 */
export class InterpolationError extends Error {}

const PATTERN = /\$(?:(\$)|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))/g;

export function interpolate(text: string, env: Record<string, string | undefined>): string {
  return text.replace(PATTERN, (_match, dollar, braced, operator, argument, bare) => {
    if (dollar) return '$';
    const name: string = braced ?? bare;
    const value = env[name];
    const unset = value === undefined;
    const missing = operator?.startsWith(':') ? unset || value === '' : unset;
    switch (operator?.replace(':', '')) {
      case '-':
        return missing ? argument : (value as string);
      case '?':
        if (missing) throw new InterpolationError(`${name}: ${argument || 'required'}`);
        return value as string;
      case '+':
        return missing ? '' : argument;
      default:
        return value ?? '';
    }
  });
}

/** Interpolates every string value of a parsed compose document; collects every missing variable. */
export function interpolateDocument<T>(doc: T, env: Record<string, string | undefined>): T {
  const errors = new Set<string>();
  const visit = (value: unknown): unknown => {
    if (typeof value === 'string') {
      try {
        return interpolate(value, env);
      } catch (err) {
        if (err instanceof InterpolationError) errors.add(err.message);
        return value;
      }
    }
    if (Array.isArray(value)) return value.map(visit);
    if (value && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, visit(v)]));
    }
    return value;
  };
  const result = visit(doc) as T;
  if (errors.size > 0) throw new InterpolationError([...errors].sort().join('\n'));
  return result;
}
