package mongodev;

import java.util.ArrayList;
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
 * The documents of a unique index in the sort order of its last field (the library's
 * ValueComparator), per value of its other fields (the prefix, normalized as {@link KeyValues} does
 * for equality lookups; none for a single-field index). A query with equalities on the prefix,
 * sorted by the last field, with a limit, then walks the first entries of its prefix instead of
 * matching and sorting every candidate, as MongoDB does (a page of services by name; a service's
 * rollouts by generation). Kept beside the library's unique index by {@link TwinnedUniqueIndex}.
 *
 * <p>It stops serving ({@link #usable}) for good once two documents of one prefix share a sort key
 * (values the comparator holds equal but the library's index does not), a document has an array on
 * the sort field (where a sort takes an element), or a prefix value a lookup cannot tell (an array or
 * an embedded document): such queries are served as before.
 */
final class SortedKeys<P> {

    /** Positions one step of a walk copies out under the lock (writes may come between steps). */
    private static final int STEP = 256;

    private final List<String> prefixPaths;
    private final String path;
    private final Map<List<Object>, TreeMap<Object, P>> byPrefix = new HashMap<>();
    private final Map<P, Key> keyByPosition = new HashMap<>();
    /** remove(document) is not always told the position (a sparse index's library part lacks some documents); _id never changes. */
    private final Map<Object, P> positionById = new HashMap<>();
    private boolean usable = true;

    private record Key(List<Object> prefix, Object value) {
    }

    /** {@code paths}: the index's fields; the last one is the sort field. */
    SortedKeys(List<String> paths) {
        this.prefixPaths = List.copyOf(paths.subList(0, paths.size() - 1));
        this.path = paths.get(paths.size() - 1);
    }

    /** The fields a query must hold equalities on for a walk (none for a single-field index). */
    List<String> prefixPaths() {
        return prefixPaths;
    }

    /** The sort field. */
    String path() {
        return path;
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
            Object value = Utils.getSubdocumentValue(document, path);
            TreeMap<Object, P> sorted = byPrefix.computeIfAbsent(prefix, p -> new TreeMap<>(ValueComparator.asc()));
            if (prefix.contains(KeyValues.NOT_COMPARABLE) || KeyValues.crossesArray(document, path) || sorted.containsKey(value)) {
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
        TreeMap<Object, P> sorted = byPrefix.get(key.prefix());
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
     * when {@code ascending} is false), starting at {@code from} (null: at the first entry) — read
     * lazily, a step at a time.
     */
    Iterable<P> positions(List<Object> prefix, boolean ascending, Object from, boolean inclusive) {
        return () -> new Iterator<>() {
            private final List<P> step = new ArrayList<>();
            private int next;
            private Object last;
            private boolean started;
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
                    TreeMap<Object, P> sorted = byPrefix.get(prefix);
                    if (sorted != null) {
                        NavigableMap<Object, P> rest = ascending ? sorted : sorted.descendingMap();
                        if (started) {
                            rest = rest.tailMap(last, false);
                        } else if (from != null) {
                            rest = rest.tailMap(from, inclusive);
                        }
                        for (Map.Entry<Object, P> entry : rest.entrySet()) {
                            if (step.size() == STEP) {
                                break;
                            }
                            step.add(entry.getValue());
                            last = entry.getKey();
                        }
                    }
                }
                started = true;
                exhausted = step.size() < STEP;
            }
        };
    }
}
