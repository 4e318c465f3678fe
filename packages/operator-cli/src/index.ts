export { HELP, type Io, runCli } from './cli';
