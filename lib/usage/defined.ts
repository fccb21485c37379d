/**
 * defined keeps only the fields of `o` that are there: a figure or capacity the source did not
 * give stays absent (undefined when read), never a made-up 0, and a sample's JSON carries no
 * `"field": undefined` holes that would compare unequal to the same sample read back.
 */
export function defined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
