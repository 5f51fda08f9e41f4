/** The named fields of an object, as a new object (absent fields stay absent). */
export function pick<T extends object, K extends keyof T> (value: T, keys: readonly K[]): Pick<T, K> {
  const picked = {} as Pick<T, K>;
  for (const key of keys) if (value[key] !== undefined) picked[key] = value[key];
  return picked;
}
