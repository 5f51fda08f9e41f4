package mongodev;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.NoSuchElementException;
import java.util.TreeMap;

import de.bwaldvogel.mongo.backend.Utils;
import de.bwaldvogel.mongo.backend.ValueComparator;
import de.bwaldvogel.mongo.bson.Document;

/**
 * The documents of an index in the order of its sort fields (the library's ValueComparator, field by
 * field), per value of its other, leading fields (the prefix, normalized as {@link KeyValues} does for
 * equality lookups; none for a single-field index). A query with equalities on the prefix, sorted by
 * the sort fields (all ascending or all descending), with a limit, then walks the first entries of its
 * prefix instead of matching and sorting every candidate, as MongoDB does (a page of services by name;
 * a service's rollouts by generation; a service's releases newest first, by {lastObservedAt, _id}).
 * Kept beside the library's unique index by {@link TwinnedUniqueIndex} (sorted by its last field), and
 * beside a non-unique compound index that ends in _id (so that no two documents share a key) by
 * {@link EqualityIndex} (sorted by all fields but the first).
 *
 * <p>It stops serving ({@link #usable}) for good once two documents of one prefix share a sort key
 * (values the comparator holds equal but the library's index does not), a document has an array on
 * a sort field (where a sort takes an element), or a prefix value a lookup cannot tell (an array or
 * an embedded document): such queries are served as before.
 */
final class SortedKeys<P> {

    /** Positions one step of a walk copies out under the lock (writes may come between steps). */
    private static final int STEP = 256;

    /**
     * A place in the order: a document's sort values ({@code tail} 0), or a bound on the first sort
     * field alone, just before ({@code tail} -1) or just after (+1) every key that starts with its value.
     */
    private record SortKey(List<Object> values, int tail) {
    }

    /** Field by field with the library's comparator; a bound sits before or after the keys it prefixes. */
    private static final Comparator<SortKey> ORDER = (a, b) -> {
        int shared = Math.min(a.values().size(), b.values().size());
        for (int i = 0; i < shared; i++) {
            int c = ValueComparator.asc().compare(a.values().get(i), b.values().get(i));
            if (c != 0) {
                return c;
            }
        }
        if (a.values().size() == b.values().size()) {
            return Integer.compare(a.tail(), b.tail());
        }
        return a.values().size() < b.values().size() ? (a.tail() > 0 ? 1 : -1) : (b.tail() > 0 ? -1 : 1);
    };

    private final List<String> prefixPaths;
    private final List<String> sortPaths;
    private final Map<List<Object>, TreeMap<SortKey, P>> byPrefix = new HashMap<>();
    private final Map<P, Key> keyByPosition = new HashMap<>();
    /** remove(document) is not always told the position (a sparse index's library part lacks some documents); _id never changes. */
    private final Map<Object, P> positionById = new HashMap<>();
    private boolean usable = true;

    private record Key(List<Object> prefix, SortKey value) {
    }

    /** {@code prefixPaths}: the fields a walk needs equalities on; {@code sortPaths}: the fields it is ordered by. */
    SortedKeys(List<String> prefixPaths, List<String> sortPaths) {
        this.prefixPaths = List.copyOf(prefixPaths);
        this.sortPaths = List.copyOf(sortPaths);
    }

    /** The fields a query must hold equalities on for a walk (none for a single-field index). */
    List<String> prefixPaths() {
        return prefixPaths;
    }

    /** The sort fields, in order. */
    List<String> sortPaths() {
        return sortPaths;
    }

    synchronized boolean isEmpty() {
        return keyByPosition.isEmpty();
    }

    synchronized boolean usable() {
        return usable;
    }

    synchronized void add(Document document, P position) {
        forget(position);
        if (!usable) {
            return;
        }
        try {
            List<Object> prefix = KeyValues.indexValues(document, prefixPaths);
            List<Object> values = new ArrayList<>(sortPaths.size());
            boolean array = false;
            for (String path : sortPaths) {
                values.add(Utils.getSubdocumentValue(document, path));
                array |= KeyValues.crossesArray(document, path);
            }
            SortKey value = new SortKey(values, 0);
            TreeMap<SortKey, P> sorted = byPrefix.computeIfAbsent(prefix, p -> new TreeMap<>(ORDER));
            if (prefix.contains(KeyValues.NOT_COMPARABLE) || array || sorted.containsKey(value)) {
                stop(); // a prefix no lookup can tell, an array, or a tie the walk would have to order as a scan does
                return;
            }
            sorted.put(value, position);
            keyByPosition.put(position, new Key(prefix, value));
            positionById.put(document.get("_id"), position);
        } catch (RuntimeException e) {
            stop(); // a value the comparator cannot place
        }
    }

    private void stop() {
        usable = false;
        byPrefix.clear();
        keyByPosition.clear();
        positionById.clear();
    }

    /** Forgets a document removed from the collection. */
    synchronized void remove(Document document) {
        P position = positionById.remove(document.get("_id"));
        if (position != null) {
            forget(position);
        }
    }

    synchronized void forget(P position) {
        Key key = keyByPosition.remove(position);
        if (key == null) {
            return;
        }
        TreeMap<SortKey, P> sorted = byPrefix.get(key.prefix());
        if (sorted != null && position.equals(sorted.get(key.value()))) {
            sorted.remove(key.value());
            if (sorted.isEmpty()) {
                byPrefix.remove(key.prefix());
            }
        }
    }

    /** The index was dropped (or is being rebuilt from the documents): serves again from what is added next. */
    synchronized void clear() {
        byPrefix.clear();
        keyByPosition.clear();
        positionById.clear();
        usable = true;
    }

    /**
     * The positions of one prefix (normalized values of {@link #prefixPaths}) in sort order (descending
     * when {@code ascending} is false), starting at {@code from}, a value of the first sort field
     * (null: at the first entry), with the entries holding it or not ({@code inclusive}) — read
     * lazily, a step at a time.
     */
    Iterable<P> positions(List<Object> prefix, boolean ascending, Object from, boolean inclusive) {
        // In walking order, an inclusive bound sits before the keys that start with its value, an exclusive one after them.
        SortKey start = from == null ? null : new SortKey(List.of(from), inclusive == ascending ? -1 : 1);
        return () -> new Iterator<>() {
            private final List<P> step = new ArrayList<>();
            private int next;
            private SortKey last;
            private boolean exhausted;

            @Override
            public boolean hasNext() {
                if (next < step.size()) {
                    return true;
                }
                if (exhausted) {
                    return false;
                }
                fill();
                return next < step.size();
            }

            @Override
            public P next() {
                if (!hasNext()) {
                    throw new NoSuchElementException();
                }
                return step.get(next++);
            }

            private void fill() {
                step.clear();
                next = 0;
                synchronized (SortedKeys.this) {
                    TreeMap<SortKey, P> sorted = byPrefix.get(prefix);
                    if (sorted != null) {
                        NavigableMap<SortKey, P> rest = ascending ? sorted : sorted.descendingMap();
                        if (last != null) {
                            rest = rest.tailMap(last, false);
                        } else if (start != null) {
                            rest = rest.tailMap(start, true);
                        }
                        for (Map.Entry<SortKey, P> entry : rest.entrySet()) {
                            if (step.size() == STEP) {
                                break;
                            }
                            step.add(entry.getValue());
                            last = entry.getKey();
                        }
                    }
                }
                exhausted = step.size() < STEP;
            }
        };
    }
}
