/**
 * Writes prometheus-rule.yaml: the PrometheusRule (Prometheus Operator) holding exactly the groups of
 * ../alerts.yaml, which stays the one place the rules are written. Run it after changing the rules:
 * `npx tsx deploy/monitoring/prometheus-operator/render.ts` (test/e2e/monitoring-rules.test.ts fails until then).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse, stringify } from 'yaml';

export const RULES_FILE = path.join(__dirname, '..', 'alerts.yaml');
export const PROMETHEUS_RULE_FILE = path.join(__dirname, 'prometheus-rule.yaml');

const HEADER = `# Generated from deploy/monitoring/alerts.yaml by render.ts beside this file: edit the rules there, then run
# \`npx tsx deploy/monitoring/prometheus-operator/render.ts\`. Your Prometheus picks it up when its ruleSelector
# matches its labels (kube-prometheus-stack: \`release: <helm release>\`): add them in your overlay.
`;

/** The text prometheus-rule.yaml must hold for the rule file `rules` (alerts.yaml by default). */
export function renderPrometheusRule(rules: string = readFileSync(RULES_FILE, 'utf8')): string {
  const { groups } = parse(rules) as { groups: unknown[] };
  const prometheusRule = {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: { name: 'ai-platform-alerts' },
    spec: { groups },
  };
  return HEADER + stringify(prometheusRule, { lineWidth: 0 });
}

if (require.main === module) writeFileSync(PROMETHEUS_RULE_FILE, renderPrometheusRule());
