import { type Logger, pino } from "pino";
import pretty from "pino-pretty";

/**
 * hostLogger is the Node host's pino logger: readable, coloured lines when stdout is a terminal
 * (someone is watching `npm start`), JSON lines otherwise (a log collector is), at `level`.
 */
export function hostLogger(level: string, stream: NodeJS.WriteStream = process.stdout): Logger {
  if (!stream.isTTY) return pino({ level }, stream);
  return pino(
    { level },
    pretty({ colorize: true, translateTime: "SYS:HH:MM:ss.l", ignore: "pid,hostname", destination: stream }),
  );
}
