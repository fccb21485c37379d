/**
 * Log is the logging surface shared code needs. pino's logger satisfies it in the Node host;
 * the Worker passes a console-backed one. Keeping it this narrow keeps pino out of workerd.
 */
export interface Log {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** consoleLog writes one JSON line per entry, the format Workers' log tail shows best. */
export function consoleLog(base: Record<string, unknown> = {}): Log {
  const write = (level: string) => (obj: object, msg?: string) => {
    console.log(JSON.stringify({ level, time: new Date().toISOString(), ...base, ...obj, msg }));
  };
  return { debug: write("debug"), info: write("info"), warn: write("warn"), error: write("error") };
}
