import type { Collection, Doc, Store } from '@platform/store';

type GatedOperation = 'insertOne' | 'findOneAndUpdate' | 'updateOne';

/**
 * A store whose `insertOne` into one collection, for the documents a gate picks, waits until the test opens the
 * gate: a request that read what it needs and is about to write, held there while another request (a deletion)
 * runs to its end. The interleaving a busy store or a second instance produces now and then, made certain. A gate on
 * `findOneAndUpdate` or `updateOne` holds that write the same way (`matches` then gets its filter).
 */
export function storeWithInsertGate(store: Store) {
  const gates: Array<{
    collection: string;
    operations: GatedOperation[];
    matches: (doc: Doc) => boolean;
    reached: () => void;
    open: Promise<void>;
  }> = [];
  const wrap = <T extends Doc>(name: string, inner: Collection<T>): Collection<T> =>
    new Proxy(inner, {
      get(target, prop) {
        if (prop === 'insertOne' || prop === 'findOneAndUpdate' || prop === 'updateOne')
          return async (doc: T, ...rest: unknown[]) => {
            const i = gates.findIndex(
              (g) => g.collection === name && g.operations.includes(prop) && g.matches(doc),
            );
            if (i >= 0) {
              const [gate] = gates.splice(i, 1);
              gate!.reached();
              await gate!.open;
            }
            return (target[prop] as (...args: unknown[]) => unknown).call(target, doc, ...rest);
          };
        const value = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  const handles = new Map<string, Collection<Doc>>();
  return {
    store: {
      ...store,
      engine: store.engine,
      collection<T extends Doc>(name: string, indexes?: Parameters<Store['collection']>[1]) {
        if (!handles.has(name))
          handles.set(name, wrap(name, store.collection<T>(name, indexes)) as unknown as Collection<Doc>);
        return handles.get(name) as unknown as Collection<T>;
      },
      blobs: (bucket: string) => store.blobs(bucket),
      ping: () => store.ping(),
      close: () => store.close(),
    } as Store,
    /** holds the next insert (or one of `operations`) into `collection` that `matches` until `release` is called */
    gate(
      collection: string,
      matches: (doc: Doc) => boolean = () => true,
      operations: GatedOperation[] = ['insertOne'],
    ) {
      let reached!: () => void;
      let release!: () => void;
      const arrived = new Promise<void>((resolve) => {
        reached = resolve;
      });
      const open = new Promise<void>((resolve) => {
        release = resolve;
      });
      gates.push({ collection, operations, matches, reached, open });
      return { arrived, release };
    },
  };
}
