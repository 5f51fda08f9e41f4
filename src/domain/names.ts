/** Code-point order of plain strings (names, keys, ids): the same on every machine, whatever its locale. */
export const compareNames = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
