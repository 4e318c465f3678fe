import { type CounterSeries, counterFamily, createHttpMetrics, type HttpMetrics } from '@platform/kernel';

/** what became of a password sign-in step (the password, or a second-factor code) */
export type PasswordLoginResult = 'success' | 'invalid_credentials' | 'invalid_second_factor' | 'throttled';

export interface AuthMetrics {
  /** request count and latency by route (the kernel's), and the registry behind /metrics */
  http: HttpMetrics;
  passwordLogin(result: PasswordLoginResult): void;
}

/** auth's Prometheus metrics (docs/decisions/0097): password sign-ins by result. No account in any label. */
export function createAuthMetrics(): AuthMetrics {
  const http = createHttpMetrics('auth', false);
  const family = counterFamily(
    http.registry,
    'auth_password_logins_total',
    'Password sign-in steps (API, sign-in pages, OpenID Connect), by result; throttled: refused by the login throttle',
  );
  const logins = {} as Record<PasswordLoginResult, CounterSeries>;
  for (const result of ['success', 'invalid_credentials', 'invalid_second_factor', 'throttled'] as const)
    logins[result] = family.series({ result });
  return {
    http,
    passwordLogin: (result) => {
      logins[result].value++;
    },
  };
}
