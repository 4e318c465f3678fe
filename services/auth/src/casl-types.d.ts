// CASL 7 publishes its types only through package.json "exports", which the repo's
// `moduleResolution: node` does not read; point the bare specifier at them explicitly.
declare module '@casl/ability' {
  export * from '@casl/ability/dist/types/index';
}
