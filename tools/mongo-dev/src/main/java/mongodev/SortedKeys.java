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
 * The documents of a single-field unique index in the field's sort order (the library's
 * ValueComparator), so that a query sorted by that field with a limit walks the first entries
 * instead of matching and sorting the whole collection, as MongoDB does (a page of services by
 * name). Kept beside the library's unique index by {@link TwinnedUniqueIndex}.
 *
 * <p>It stops serving ({@link #usable}) for good once two documents share a sort key (values the
 * comparator holds equal but the library's index does not) or a document has an array on the path,
 * where a sort takes the smallest element: such queries scan and sort again, as before.
 */
final class SortedKeys<P> {

    /** Positions one step of a walk copies out under the lock (writes may come between steps). */
    private static final int STEP = 256;

    private final String path;
    private final TreeMap<Object, P> byValue = new TreeMap<>(ValueComparator.asc());
    private final Map<P, Object> valueByPosition = new HashMap<>();
    private boolean usable = true;

    SortedKeys(String path) {
        this.path = path;
    }

    String path() {
        return path;
    }

    synchronized boolean isEmpty() {
        return valueByPosition.isEmpty();
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
            Object value = Utils.getSubdocumentValue(document, path);
            if (KeyValues.crossesArray(document, path) || byValue.containsKey(value)) {
                stop(); // an array, or a tie the walk would have to order as a scan does
                return;
            }
            byValue.put(value, position);
            valueByPosition.put(position, value);
        } catch (RuntimeException e) {
            stop(); // a value the comparator cannot place
        }
    }

    private void stop() {
        usable = false;
        byValue.clear();
        valueByPosition.clear();
    }

    synchronized void forget(P position) {
        if (!valueByPosition.containsKey(position)) {
            return;
        }
        Object value = valueByPosition.remove(position);
        if (position.equals(byValue.get(value))) {
            byValue.remove(value);
        }
    }

    /** The index was dropped (or is being rebuilt from the documents): serves again from what is added next. */
    synchronized void clear() {
        byValue.clear();
        valueByPosition.clear();
        usable = true;
    }

    /**
     * The positions in sort order (descending when {@code ascending} is false), starting at
     * {@code from} (null: at the first entry) — read lazily, a step at a time.
     */
    Iterable<P> positions(boolean ascending, Object from, boolean inclusive) {
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
                    NavigableMap<Object, P> rest = ascending ? byValue : byValue.descendingMap();
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
                started = true;
                exhausted = step.size() < STEP;
            }
        };
    }
}
