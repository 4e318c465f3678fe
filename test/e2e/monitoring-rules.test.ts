import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseMetrics, type Sample, waitFor } from '@platform/testkit';
import { parse, parseAllDocuments, stringify } from 'yaml';
import {
  PROMETHEUS_RULE_FILE,
  RULES_FILE,
  renderPrometheusRule,
} from '../../deploy/monitoring/prometheus-operator/render';
import { type GatewayWorld, startGatewayWorld } from '../../services/llm-gateway/test/support';
import { REPO_ROOT } from '../deploy/services';

/**
 * The alerting rules of deploy/monitoring (docs/decisions/0100): every alert is documented in the runbook and
 * unit-tested for promtool, every series a rule selects is exported by a running platform (names, label names
 * and label values), and promtool accepts the rules and passes their unit tests.
 */

const MONITORING = path.join(REPO_ROOT, 'deploy', 'monitoring');
const RULE_TESTS = path.join(MONITORING, 'alerts.test.yaml');
const RUNBOOK = path.join(REPO_ROOT, 'docs', 'operations.md');
const SEVERITIES = ['critical', 'warning', 'info'];
/** labels a scrape adds to a target (not in any exposition); `up` is Prometheus's own series for a target */
const TARGET_LABELS = new Set(['instance', 'job', 'pod', 'namespace', 'container', 'endpoint']);
const PROMETHEUS_SERIES = new Set(['up']);

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
const rulesOf = (text: string): Rule[] =>
  (parse(text) as { groups: Array<{ rules: Rule[] }> }).groups.flatMap((g) => g.rules);
const RULES = rulesOf(readFileSync(RULES_FILE, 'utf8'));
const ALERTS = RULES.filter((r) => r.alert !== undefined);

// --- what a PromQL expression selects ---------------------------------------------------------------------------

interface Matcher {
  label: string;
  op: '=' | '!=' | '=~' | '!~';
  value: string;
}
interface Selector {
  name: string;
  matchers: Matcher[];
}

const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'atan2', 'inf', 'nan']);
const LABEL_LISTS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);
/** aggregation operators: followed by `(` or by a `by`/`without` clause, never a metric */
const AGGREGATIONS = new Set([
  'sum',
  'min',
  'max',
  'avg',
  'group',
  'stddev',
  'stdvar',
  'count',
  'count_values',
  'bottomk',
  'topk',
  'quantile',
  'limitk',
  'limit_ratio',
]);

/**
 * The series selectors of a PromQL expression (metric name and label matchers) and the labels of its `by`,
 * `without`, `on`, `ignoring` and `group_*` clauses. A lexical reading: promtool checks the syntax, this finds the
 * names. A selector without a metric name is refused (nothing could check what it selects).
 */
function readPromQL(expr: string): { selectors: Selector[]; grouping: string[] } {
  const selectors: Selector[] = [];
  const grouping: string[] = [];
  let i = 0;
  const skipSpace = () => {
    while (i < expr.length && /\s/.test(expr[i]!)) i++;
  };
  const readString = (): string => {
    const quote = expr[i++]!;
    let value = '';
    while (i < expr.length && expr[i] !== quote) {
      if (expr[i] === '\\' && quote !== '`') i++;
      value += expr[i++];
    }
    i++;
    return value;
  };
  const readWord = (): string => {
    const start = i;
    while (i < expr.length && /[\w:]/.test(expr[i]!)) i++;
    return expr.slice(start, i);
  };
  const readMatchers = (): Matcher[] => {
    const matchers: Matcher[] = [];
    i++; // {
    for (;;) {
      skipSpace();
      if (expr[i] === '}') break;
      if (expr[i] === ',') {
        i++;
        continue;
      }
      const label = readWord();
      skipSpace();
      const op = /^(=~|!~|!=|=)/.exec(expr.slice(i))?.[1] as Matcher['op'] | undefined;
      if (!label || !op) throw new Error(`cannot read the label matchers in: ${expr}`);
      i += op.length;
      skipSpace();
      matchers.push({ label, op, value: readString() });
    }
    i++; // }
    return matchers;
  };
  while (i < expr.length) {
    const c = expr[i]!;
    if (c === '#') {
      while (i < expr.length && expr[i] !== '\n') i++;
    } else if (c === '"' || c === "'" || c === '`') {
      readString();
    } else if (c === '[') {
      while (i < expr.length && expr[i] !== ']') i++; // a range or a subquery's durations
    } else if (c === '{') {
      throw new Error(`a selector without a metric name in: ${expr}`);
    } else if (/\d/.test(c) || (c === '.' && /\d/.test(expr[i + 1] ?? ''))) {
      while (i < expr.length && /[\w.]/.test(expr[i]!)) i++; // a number or a duration (offset 5m)
    } else if (/[a-zA-Z_:]/.test(c)) {
      const word = readWord();
      skipSpace();
      if (LABEL_LISTS.has(word)) {
        if (expr[i] === '(') {
          const end = expr.indexOf(')', i);
          grouping.push(
            ...expr
              .slice(i + 1, end)
              .split(',')
              .map((l) => l.trim())
              .filter(Boolean),
          );
          i = end + 1;
        }
      } else if (KEYWORDS.has(word) || AGGREGATIONS.has(word) || expr[i] === '(') {
        // an operator, or a function or aggregation whose arguments are read on
      } else {
        const matchers = expr[i] === '{' ? readMatchers() : [];
        if (matchers.some((m) => m.label === '__name__'))
          throw new Error(`a selector naming its metric by __name__ in: ${expr}`);
        selectors.push({ name: word, matchers });
      }
    } else {
      i++;
    }
  }
  return { selectors, grouping };
}

// --- what a running platform exports ----------------------------------------------------------------------------

const matches = (sample: Sample, m: Matcher): boolean => {
  const value = sample.labels[m.label] ?? '';
  if (m.op === '=') return value === m.value;
  if (m.op === '!=') return value !== m.value;
  const full = new RegExp(`^(?:${m.value})$`).test(value);
  return m.op === '=~' ? full : !full;
};
/** `a|b|c` of plain values: each one is a value to find, not a pattern */
const alternatives = (m: Matcher): string[] | null =>
  m.op === '=~' && /^[\w-]+(\|[\w-]+)*$/.test(m.value) ? m.value.split('|') : null;

/**
 * What in `rules` selects nothing on a platform exporting `samples`: a metric no service exports, a label no
 * series of it has, a label value (each alternative of `a|b`) that selects no series, a grouping label that none
 * of the expression's metrics has, a recorded series no rule records.
 */
function unexported(rules: Rule[], samples: Sample[]): string[] {
  const recorded = new Set(rules.flatMap((r) => (r.record ? [r.record] : [])));
  const problems: string[] = [];
  for (const rule of rules) {
    const name = rule.alert ?? rule.record;
    const { selectors, grouping } = readPromQL(rule.expr);
    const labelsSeen = new Set<string>();
    for (const { name: metric, matchers } of selectors) {
      if (PROMETHEUS_SERIES.has(metric)) continue;
      if (metric.includes(':')) {
        if (!recorded.has(metric)) problems.push(`${name}: ${metric} is recorded by no rule`);
        continue;
      }
      const series = samples.filter((s) => s.name === metric);
      if (series.length === 0) {
        problems.push(`${name}: no service exports ${metric}`);
        continue;
      }
      for (const s of series) for (const label of Object.keys(s.labels)) labelsSeen.add(label);
      const selects = (ms: Matcher[]) => series.some((s) => ms.every((m) => matches(s, m)));
      for (const m of matchers) {
        if (!series.some((s) => m.label in s.labels))
          problems.push(`${name}: no series of ${metric} has a label ${m.label}`);
      }
      if (!selects(matchers)) {
        problems.push(
          `${name}: ${metric}{${matchers.map((m) => `${m.label}${m.op}"${m.value}"`)}} selects nothing`,
        );
        continue;
      }
      for (const m of matchers) {
        for (const value of alternatives(m) ?? []) {
          const one = matchers.map((o) => (o === m ? { ...m, op: '=' as const, value } : o));
          if (!selects(one)) problems.push(`${name}: no series of ${metric} has ${m.label}="${value}"`);
        }
      }
    }
    for (const label of grouping) {
      if (!TARGET_LABELS.has(label) && !labelsSeen.has(label) && selectors.some((s) => !s.name.includes(':')))
        problems.push(`${name}: none of its metrics has a label ${label}`);
    }
  }
  return problems;
}

// --- the rules themselves ----------------------------------------------------------------------------------------

/** GitHub's anchor of a Markdown heading */
const anchorOf = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\w\- ]/g, '')
    .replace(/ /g, '-');

describe('the alerting rules (deploy/monitoring/alerts.yaml)', () => {
  it('every alert has a severity, a summary, a description, a runbook section, and a promtool unit test', () => {
    const runbook = readFileSync(RUNBOOK, 'utf8');
    const anchors = new Set([...runbook.matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchorOf(m[1]!)));
    const tests = parse(readFileSync(RULE_TESTS, 'utf8')) as {
      tests: Array<{ alert_rule_test?: Array<{ alertname: string; exp_alerts?: unknown[] }> }>;
    };
    const tested = new Set(
      tests.tests.flatMap((t) =>
        (t.alert_rule_test ?? []).filter((a) => (a.exp_alerts ?? []).length > 0).map((a) => a.alertname),
      ),
    );
    expect(ALERTS.length).toBeGreaterThan(10);
    const problems: string[] = [];
    for (const alert of ALERTS) {
      const name = alert.alert!;
      if (!SEVERITIES.includes(alert.labels?.severity ?? '')) problems.push(`${name}: severity`);
      for (const key of ['summary', 'description', 'runbook_url'])
        if (!alert.annotations?.[key]) problems.push(`${name}: no ${key}`);
      const url = alert.annotations?.runbook_url ?? '';
      if (url !== `docs/operations.md#${name.toLowerCase()}` || !anchors.has(name.toLowerCase()))
        problems.push(`${name}: runbook_url ${url} is not a section of docs/operations.md`);
      if (!tested.has(name)) problems.push(`${name}: no promtool unit test expects it to fire`);
    }
    expect(problems).toEqual([]);
  });

  it('reads the metric names, label matchers and grouping labels of an expression', () => {
    expect(
      readPromQL(
        'sum without (instance, pod) (rate(a_total{x="1", y=~"b|c"}[5m])) / on (ns) group_left () b offset 5m > 0.5 and absent(c{z!="q"})',
      ),
    ).toEqual({
      selectors: [
        {
          name: 'a_total',
          matchers: [
            { label: 'x', op: '=', value: '1' },
            { label: 'y', op: '=~', value: 'b|c' },
          ],
        },
        { name: 'b', matchers: [] },
        { name: 'c', matchers: [{ label: 'z', op: '!=', value: 'q' }] },
      ],
      grouping: ['instance', 'pod', 'ns'],
    });
  });

  it("the component's NetworkPolicy is valid for its Kubernetes API schema (kubernetes-models)", () => {
    const file = path.join(MONITORING, 'prometheus-operator', 'network-policy.yaml');
    const policy = parse(readFileSync(file, 'utf8'));
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { NetworkPolicy } = require('kubernetes-models/networking.k8s.io/v1/NetworkPolicy');
    expect(() => new NetworkPolicy(policy).validate()).not.toThrow();
  });

  it("the optional component's PrometheusRule holds the same groups (regenerated by render.ts)", () => {
    expect(readFileSync(PROMETHEUS_RULE_FILE, 'utf8')).toBe(renderPrometheusRule());
    const [rule] = parseAllDocuments(readFileSync(PROMETHEUS_RULE_FILE, 'utf8')).map((d) => d.toJS());
    expect(rule.spec.groups).toEqual(parse(readFileSync(RULES_FILE, 'utf8')).groups);
  });

  const kubectl = spawnSync('kubectl', ['version', '--client'], { stdio: 'ignore' }).status === 0;
  (kubectl ? it : it.skip)(
    'the component adds the rules, a PodMonitor and the admin port for Prometheus to an overlay (where kubectl is installed)',
    () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'monitoring-overlay-'));
      try {
        const deploy = path.relative(dir, path.join(REPO_ROOT, 'deploy'));
        writeFileSync(
          path.join(dir, 'kustomization.yaml'),
          [
            'apiVersion: kustomize.config.k8s.io/v1beta1',
            'kind: Kustomization',
            'namespace: ai-platform',
            'resources:',
            `  - ${deploy}/overlays/example`,
            'components:',
            `  - ${deploy}/monitoring/prometheus-operator`,
          ].join('\n'),
        );
        const rendered = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
        expect(rendered.stderr).toBe('');
        const objects = parseAllDocuments(rendered.stdout).map((d) => d.toJS());
        const of = (kind: string) => objects.filter((o) => o.kind === kind);
        expect(of('PrometheusRule').map((o) => [o.metadata.namespace, o.spec.groups])).toEqual([
          ['ai-platform', parse(readFileSync(RULES_FILE, 'utf8')).groups],
        ]);
        const [monitor] = of('PodMonitor');
        const platformPods = of('Deployment').map((d) => d.spec.template);
        expect(platformPods).toHaveLength(5);
        for (const pod of platformPods) {
          for (const [k, v] of Object.entries(monitor.spec.selector.matchLabels))
            expect(pod.metadata.labels[k]).toBe(v);
          const admin = pod.spec.containers[0].ports.find((p: { name: string }) => p.name === 'admin');
          expect(admin?.containerPort).toBe(9464);
        }
        const policy = of('NetworkPolicy').find((p) => p.metadata.name === 'admin-port-from-monitoring');
        expect(policy.spec.podSelector.matchLabels).toEqual(monitor.spec.selector.matchLabels);
        expect(policy.spec.ingress[0].ports).toEqual([{ port: 9464, protocol: 'TCP' }]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});

describe('every series the rules select is exported by a running platform', () => {
  let w: GatewayWorld;
  let samples: Sample[];
  beforeAll(async () => {
    w = await startGatewayWorld();
    const { owner } = await w.org('monitoring-org');
    const as = { bearer: owner.token };
    const chat = (model: string, extra: Record<string, unknown> = {}) =>
      w.call('gateway', 'POST', '/v1/chat/completions', as, {
        model,
        messages: [{ role: 'user', content: 'hello monitoring' }],
        ...extra,
      });
    // what makes the series bound at their first use exist: a call answered, a stream, a provider error with its
    // retries and failover, and a 502 through the edge
    expect((await chat('sim/gpt')).status).toBe(200);
    expect((await chat('sim/gpt', { stream: true })).status).toBe(200);
    w.sim.script([
      { match: { model: 'flaky-sim' }, error: { status: 500 } },
      { match: { model: 'gpt-sim' }, error: { status: 429, retryAfterSeconds: 30 } },
    ]);
    expect((await chat('sim/flaky')).status).toBe(200);
    expect((await chat('sim/gpt')).status).toBe(502);
    w.sim.reset();
    const scrapeAll = async () =>
      (
        await Promise.all(
          Object.values(w.p.admin).map(async (url) =>
            parseMetrics(await (await fetch(`${url}/metrics`)).text()),
          ),
        )
      ).flat();
    // accounting runs after the answer has gone out
    samples = await waitFor(
      async () => {
        const all = await scrapeAll();
        const accounted = all.some(
          (s) => s.name === 'llm_gateway_requests_total' && s.labels.outcome === 'provider_error',
        );
        return accounted ? all : null;
      },
      { what: 'the failed request to be accounted' },
    );
  });
  afterAll(() => w?.stop());

  it('every metric, label and label value of every rule', () => {
    expect(unexported(RULES, samples)).toEqual([]);
  });

  it('a rule selecting a metric, a label value or a grouping label that nothing exports is reported', () => {
    const wrong = rulesOf(`
groups:
  - name: wrong
    rules:
      - alert: Misspelt
        expr: rate(llm_gateway_request_total[5m]) > 0
      - alert: NoSuchValue
        expr: dependency_up{dependency="stores"} == 0
      - alert: NoSuchAlternative
        expr: rate(llm_gateway_usage_events_total{outcome=~"published|publish"}[5m]) > 0
      - alert: NoSuchLabel
        expr: sum by (tenant) (rate(llm_gateway_quota_refusals_total[5m])) > 0
      - alert: NotRecorded
        expr: provider_model:llm_gateway_provider_failures:rate5m > 0
`);
    expect(unexported([...RULES, ...wrong], samples)).toEqual([
      'Misspelt: no service exports llm_gateway_request_total',
      'NoSuchValue: dependency_up{dependency="stores"} selects nothing',
      'NoSuchAlternative: no series of llm_gateway_usage_events_total has outcome="publish"',
      'NoSuchLabel: none of its metrics has a label tenant',
      'NotRecorded: provider_model:llm_gateway_provider_failures:rate5m is recorded by no rule',
    ]);
  });
});

// --- promtool -----------------------------------------------------------------------------------------------------

/** Setting this makes a missing promtool fail the suite instead of skipping (.ci/run sets it). */
const REQUIRE_PROMTOOL = 'PLATFORM_REQUIRE_PROMTOOL';
const PROMTOOL = process.env.PROMTOOL_BIN ?? 'promtool';
const promtoolAvailable = spawnSync(PROMTOOL, ['--version'], { stdio: 'ignore' }).status === 0;

function describeWithPromtool(name: string, body: () => void): void {
  if (promtoolAvailable) {
    describe(name, body);
    return;
  }
  if (process.env[REQUIRE_PROMTOOL]) {
    describe(name, () => {
      it('needs promtool', () => {
        throw new Error(`promtool (${PROMTOOL}) is not installed, and ${REQUIRE_PROMTOOL} is set`);
      });
    });
    return;
  }
  console.warn(
    `\n*** SKIPPING "${name}": promtool is not installed (apt-get install -y --no-install-recommends prometheus). ` +
      `Set ${REQUIRE_PROMTOOL}=1 to make this a failure. ***\n`,
  );
  describe.skip(name, body);
}

describeWithPromtool('promtool on the rules', () => {
  const promtool = (...args: string[]) => {
    const run = spawnSync(PROMTOOL, args, { cwd: MONITORING, encoding: 'utf8' });
    return { status: run.status, output: `${run.stdout}${run.stderr}` };
  };

  it('checks the rules: PromQL that parses, names and labels that are valid', () => {
    const run = promtool('check', 'rules', 'alerts.yaml');
    expect(run).toEqual({ status: 0, output: expect.stringContaining('SUCCESS') });
  });

  it("passes the rules' unit tests: each alert fires on its incident with its labels and annotations", () => {
    const run = promtool('test', 'rules', 'alerts.test.yaml');
    expect(run).toEqual({ status: 0, output: expect.stringContaining('SUCCESS') });
  });

  it("passes them as well with the target labels the component's PodMonitor adds to every series", () => {
    interface RuleTests {
      tests: Array<{
        input_series?: Array<{ series: string }>;
        alert_rule_test?: Array<{
          alertname: string;
          exp_alerts?: Array<{ exp_labels?: Record<string, string> }>;
        }>;
      }>;
    }
    const suite = parse(readFileSync(RULE_TESTS, 'utf8')) as RuleTests & Record<string, unknown>;
    // a pod's series, scraped by the PodMonitor: its namespace, pod, container (named after the service) and port
    const podLabels = (service: string, instance?: string) => ({
      namespace: 'ai-platform',
      container: service,
      endpoint: 'admin',
      ...(instance ? { pod: instance.replace(/:\d+$/, '') } : {}),
    });
    // absent() answers with its selector's labels alone
    const absentAlerts = new Set(ALERTS.filter((a) => a.expr.includes('absent(')).map((a) => a.alert));
    for (const test of suite.tests) {
      for (const input of test.input_series ?? []) {
        const label = (name: string) => new RegExp(`[{,] *${name}="([^"]*)"`).exec(input.series)?.[1];
        const added = Object.entries(podLabels(label('service')!, label('instance')));
        input.series = input.series.replace(/\}$/, `${added.map(([k, v]) => `, ${k}="${v}"`).join('')}}`);
      }
      for (const check of test.alert_rule_test ?? []) {
        if (absentAlerts.has(check.alertname)) continue;
        for (const alert of check.exp_alerts ?? []) {
          const labels = alert.exp_labels ?? {};
          alert.exp_labels = { ...labels, ...podLabels(labels.service!, labels.instance) };
        }
      }
    }
    const dir = mkdtempSync(path.join(tmpdir(), 'rules-pod-monitor-'));
    try {
      const file = path.join(dir, 'alerts.test.yaml');
      writeFileSync(file, stringify({ ...suite, rule_files: [RULES_FILE] }));
      expect(promtool('test', 'rules', file)).toEqual({
        status: 0,
        output: expect.stringContaining('SUCCESS'),
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
