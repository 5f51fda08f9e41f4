/** Sets `key` in a map kept to `capacity` entries, the oldest set first out; answers `value`. */
export function remember<K, T> (map: Map<K, T>, key: K, value: T, capacity: number): T {
  map.delete(key);
  map.set(key, value);
  if (map.size > capacity) map.delete(map.keys().next().value as K);
  return value;
}

/** The named fields of an object, as a new object (absent fields stay absent). */
export function pick<T extends object, K extends keyof T> (value: T, keys: readonly K[]): Pick<T, K> {
  const picked = {} as Pick<T, K>;
  for (const key of keys) if (value[key] !== undefined) picked[key] = value[key];
  return picked;
}
