/**
 * What grew between two heap snapshots of one process (bench/soak/run.ts with SOAK_HEAP_DIR writes them):
 *
 *   npx tsx bench/soak/heap-diff.ts <first.heapsnapshot> <second.heapsnapshot>
 *   npx tsx bench/soak/heap-diff.ts <first> <second> --retainers Map     # who holds the new / largest Maps
 *
 * Prints, by constructor (objects and closures by name, the rest by kind, as DevTools' summary), the count and
 * self size in each and the difference, largest growth first; then the objects of the second that the first did
 * not have (ids are kept between two snapshots of one process). `--retainers <name>`: the five largest instances
 * of that constructor in the second snapshot, new ones first (own size plus the internal arrays they alone point to: a Map's or a
 * Set's table) with a shortest path to them from a GC root, ignoring weak references.
 */
import { readFileSync } from 'node:fs';

interface RawSnapshot {
  snapshot: {
    meta: {
      node_fields: string[];
      node_types: [string[], ...unknown[]];
      edge_fields: string[];
      edge_types: [string[], ...unknown[]];
    };
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

class Heap {
  readonly count: number;
  private readonly nf: number;
  private readonly ef: number;
  private readonly raw: RawSnapshot;
  private readonly firstEdge: Uint32Array;
  private readonly at: Record<string, number>;
  private readonly edgeAt: Record<string, number>;
  private retainers?: { start: Uint32Array; from: Uint32Array; edge: Uint32Array };

  constructor(file: string) {
    this.raw = JSON.parse(readFileSync(file, 'utf8')) as RawSnapshot;
    const meta = this.raw.snapshot.meta;
    this.nf = meta.node_fields.length;
    this.ef = meta.edge_fields.length;
    this.at = Object.fromEntries(meta.node_fields.map((f, i) => [f, i]));
    this.edgeAt = Object.fromEntries(meta.edge_fields.map((f, i) => [f, i]));
    this.count = this.raw.nodes.length / this.nf;
    this.firstEdge = new Uint32Array(this.count + 1);
    for (let n = 0, e = 0; n < this.count; n++) {
      this.firstEdge[n] = e;
      e += this.field(n, 'edge_count') * this.ef;
      this.firstEdge[n + 1] = e;
    }
  }

  private field(n: number, name: string) {
    return this.raw.nodes[n * this.nf + this.at[name]!]!;
  }
  type(n: number) {
    return this.raw.snapshot.meta.node_types[0][this.field(n, 'type')]!;
  }
  name(n: number) {
    return this.raw.strings[this.field(n, 'name')]!;
  }
  id(n: number) {
    return this.field(n, 'id');
  }
  size(n: number) {
    return this.field(n, 'self_size');
  }
  /** DevTools' summary groups: objects and closures by constructor, everything else by kind */
  group(n: number) {
    const type = this.type(n);
    return type === 'object' || type === 'closure' ? this.name(n) : `(${type})`;
  }
  *edges(n: number): Generator<{ type: string; name: string; to: number }> {
    const { edges, strings, snapshot } = this.raw;
    for (let e = this.firstEdge[n]!; e < this.firstEdge[n + 1]!; e += this.ef) {
      const type = snapshot.meta.edge_types[0][edges[e + this.edgeAt.type!]!]!;
      const nameOrIndex = edges[e + this.edgeAt.name_or_index!]!;
      const name = type === 'element' || type === 'hidden' ? `[${nameOrIndex}]` : strings[nameOrIndex]!;
      yield { type, name, to: edges[e + this.edgeAt.to_node!]! / this.nf };
    }
  }

  /** a shortest path from a GC root to `target`, not through weak references, as `name.edge` steps */
  pathTo(target: number): string {
    const r = this.retainersIndex();
    const { edges, strings, snapshot } = this.raw;
    const via = new Int32Array(this.count).fill(-1); // the edge (index in `edges`) we came up through
    const parent = new Int32Array(this.count).fill(-1);
    const seen = new Uint8Array(this.count);
    seen[target] = 1;
    let frontier = [target];
    for (let depth = 0; depth < 30 && frontier.length; depth++) {
      const next: number[] = [];
      for (const n of frontier) {
        for (let i = r.start[n]!; i < r.start[n + 1]!; i++) {
          const from = r.from[i]!;
          const e = r.edge[i]!;
          const type = snapshot.meta.edge_types[0][edges[e + this.edgeAt.type!]!];
          if (type === 'weak' || seen[from]) continue;
          seen[from] = 1;
          parent[from] = n;
          via[from] = e;
          if (this.type(from) === 'synthetic') {
            const steps: string[] = [];
            for (let at = from; at !== target; at = parent[at]!) {
              const edgeType = snapshot.meta.edge_types[0][edges[via[at]! + this.edgeAt.type!]!];
              const nameOrIndex = edges[via[at]! + this.edgeAt.name_or_index!]!;
              const edgeName =
                edgeType === 'element' || edgeType === 'hidden' ? `[${nameOrIndex}]` : strings[nameOrIndex];
              steps.push(`${this.group(at)} -${edgeName}->`);
            }
            return `${steps.join(' ')} ${this.group(target)}`;
          }
          next.push(from);
        }
      }
      frontier = next;
    }
    return '(no path from a root within 30 steps)';
  }

  private retainersIndex() {
    if (this.retainers) return this.retainers;
    const { edges } = this.raw;
    const toAt = this.edgeAt.to_node!;
    const start = new Uint32Array(this.count + 1);
    for (let e = 0; e < edges.length; e += this.ef) start[edges[e + toAt]! / this.nf + 1]!++;
    for (let n = 0; n < this.count; n++) start[n + 1]! += start[n]!;
    const fill = start.slice(0, this.count);
    const from = new Uint32Array(edges.length / this.ef);
    const edge = new Uint32Array(edges.length / this.ef);
    for (let n = 0; n < this.count; n++)
      for (let e = this.firstEdge[n]!; e < this.firstEdge[n + 1]!; e += this.ef) {
        const to = edges[e + toAt]! / this.nf;
        from[fill[to]!] = n;
        edge[fill[to]!++] = e;
      }
    this.retainers = { start, from, edge };
    return this.retainers;
  }
}

function summary(heap: Heap, only?: (n: number) => boolean) {
  const out = new Map<string, { count: number; size: number }>();
  for (let n = 0; n < heap.count; n++) {
    if (only && !only(n)) continue;
    const g = heap.group(n);
    const s = out.get(g) ?? { count: 0, size: 0 };
    s.count++;
    s.size += heap.size(n);
    out.set(g, s);
  }
  return out;
}

const kib = (bytes: number) => `${(bytes / 1024).toFixed(0)} KiB`;

function main() {
  const [firstFile, secondFile, option, name] = process.argv.slice(2);
  if (!firstFile || !secondFile) throw new Error('usage: heap-diff.ts <first> <second> [--retainers <name>]');
  const first = new Heap(firstFile);
  const second = new Heap(secondFile);
  const [a, b] = [summary(first), summary(second)];
  const total = (s: Map<string, { size: number }>) => [...s.values()].reduce((x, y) => x + y.size, 0);
  console.log(`heap: ${kib(total(a))} → ${kib(total(b))}; ${first.count} → ${second.count} objects\n`);
  console.log('## by constructor, largest growth of self size first');
  const rows = [...new Set([...a.keys(), ...b.keys()])].map((g) => {
    const [x, y] = [a.get(g) ?? { count: 0, size: 0 }, b.get(g) ?? { count: 0, size: 0 }];
    return { g, x, y, dSize: y.size - x.size, dCount: y.count - x.count };
  });
  for (const r of rows.sort((p, q) => q.dSize - p.dSize).slice(0, 25))
    console.log(
      `${r.g.slice(0, 48).padEnd(48)} count ${String(r.x.count).padStart(8)} → ${String(r.y.count).padStart(8)} (${r.dCount >= 0 ? '+' : ''}${r.dCount})  size ${kib(r.x.size).padStart(10)} → ${kib(r.y.size).padStart(10)} (${r.dSize >= 0 ? '+' : ''}${kib(r.dSize)})`,
    );
  const known = new Set<number>();
  for (let n = 0; n < first.count; n++) known.add(first.id(n));
  const fresh = summary(second, (n) => !known.has(second.id(n)));
  console.log('\n## objects of the second snapshot the first did not have, by constructor');
  for (const [g, s] of [...fresh].sort((p, q) => q[1].size - p[1].size).slice(0, 20))
    console.log(
      `${g.slice(0, 48).padEnd(48)} ${String(s.count).padStart(8)} objects  ${kib(s.size).padStart(10)}`,
    );

  if (option === '--retainers' && name) {
    // own size plus the internal arrays it points to (a Map's table), to rank collections by how much they hold
    const held = (n: number) => {
      let size = second.size(n);
      for (const e of second.edges(n))
        if (e.type === 'internal' || e.name === 'table') size += second.size(e.to);
      return size;
    };
    const instances: number[] = [];
    for (let n = 0; n < second.count; n++) if (second.group(n) === name) instances.push(n);
    const added = instances.filter((n) => !known.has(second.id(n)));
    // the new ones first: what grew
    const largest = (added.length ? added : instances).sort((p, q) => held(q) - held(p)).slice(0, 5);
    console.log(
      `\n## ${name}: ${instances.length} in the second snapshot, ${added.length} of them new; the largest ${added.length ? 'new ' : ''}ones, and what holds them`,
    );
    for (const n of largest) {
      const before = known.has(second.id(n)) ? 'also in the first' : 'new';
      console.log(`${kib(held(n))} (@${second.id(n)}, ${before}): ${second.pathTo(n)}`);
    }
  }
}

main();
