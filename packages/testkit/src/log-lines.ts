/** A JSON log line as the platform's logger (pino) writes it, parsed. */
type LogLine = { level: number; msg: string; [field: string]: unknown };

/**
 * What a logger writes, for a test to read: give `destination` to the logger (`createLogger`'s option) and read
 * `lines`, parsed, in the order they were written.
 */
export function logLines(): { lines: LogLine[]; destination: { write(line: string): void } } {
  const lines: LogLine[] = [];
  return { lines, destination: { write: (line) => void lines.push(JSON.parse(line)) } };
}
