package mongodev;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.UUID;

import de.bwaldvogel.mongo.backend.Missing;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.bson.ObjectId;

/**
 * Index keys for equality lookups, chosen so that a lookup never misses a document the library's
 * query matcher (DefaultQueryMatcher) would match.
 *
 * <p>The matcher compares plain values with {@code Utils.nullAwareEquals}: null and missing are equal,
 * numbers are compared as doubles (-0.0 as 0.0; a long a double cannot hold exactly stays a long),
 * everything else with {@code equals}. {@link #normalize} reproduces that for the types below, so two
 * such values match exactly when their keys are equal. Any other value (sub-documents, arrays, binary
 * data, regular expressions…) is {@link #NOT_COMPARABLE}: a document holding one under an index path
 * is a candidate for every lookup, and a query naming one is not served by an index.
 */
final class KeyValues {

    /** A value the lookups do not compare by key. */
    static final Object NOT_COMPARABLE = new Object();

    private KeyValues() {
    }

    static Object normalize(Object value) {
        if (Missing.isNullOrMissing(value)) {
            return null;
        }
        if (value instanceof Long longValue && longValue.longValue() != (long) longValue.doubleValue()) {
            return longValue;
        }
        if (value instanceof Number number) {
            double doubleValue = number.doubleValue();
            return Double.valueOf(doubleValue == 0.0 ? 0.0 : doubleValue); // -0.0 == 0.0
        }
        if (value instanceof String || value instanceof Boolean || value instanceof ObjectId
            || value instanceof Instant || value instanceof UUID) {
            return value;
        }
        return NOT_COMPARABLE;
    }

    /**
     * The document's values under these paths, normalized; {@link #NOT_COMPARABLE} where a path crosses
     * an array or ends at a value that is not comparable. Missing fields, and paths through a plain
     * value, give null.
     */
    static List<Object> indexValues(Document document, List<String> paths) {
        List<Object> values = new ArrayList<>(paths.size());
        for (String path : paths) {
            values.add(crossesArray(document, path) ? NOT_COMPARABLE : normalize(valueAt(document, path)));
        }
        return values;
    }

    /** True when the path meets an array anywhere, itself included (a multikey path on MongoDB). */
    static boolean crossesArray(Document document, String path) {
        Object current = document;
        for (String fragment : path.split("\\.", -1)) {
            if (current instanceof Collection) {
                return true;
            }
            if (!(current instanceof Document)) {
                return false;
            }
            current = ((Document) current).get(fragment);
        }
        return current instanceof Collection;
    }

    /** Null when the path is missing or runs through a plain value; call after {@link #crossesArray}. */
    private static Object valueAt(Document document, String path) {
        Object current = document;
        for (String fragment : path.split("\\.", -1)) {
            if (!(current instanceof Document)) {
                return null;
            }
            current = ((Document) current).get(fragment);
        }
        return current;
    }

    /** Paths the matcher splits as we do: no empty fragment, no operator. */
    static boolean isPlainPath(String path) {
        for (String fragment : path.split("\\.", -1)) {
            if (fragment.isEmpty() || fragment.startsWith("$")) {
                return false;
            }
        }
        return true;
    }
}
