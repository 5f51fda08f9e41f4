package mongodev;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import java.util.stream.Stream;

import de.bwaldvogel.mongo.backend.DocumentWithPosition;
import de.bwaldvogel.mongo.backend.Index;
import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.backend.Missing;
import de.bwaldvogel.mongo.backend.QueryResult;
import de.bwaldvogel.mongo.bson.Document;

/**
 * Serves a query from an index when the query holds equality conditions on all of that index's
 * fields, or on its first fields (a compound unique index through {@link TwinnedUniqueIndex}), as
 * MongoDB does. The library itself uses an index only when the query names exactly its
 * fields (AbstractUniqueIndex.canHandle), so a compare-and-swap filter such as {_id, version}
 * scanned the whole collection; and it never built non-unique indexes (see {@link EqualityIndex}).
 *
 * <p>Queries the library serves from an index itself ({@link #libraryServes}) are left to it. For the
 * others {@link #plan} returns a superset of the matching documents, or null when no index serves
 * the query (a scan, as before). The caller applies the query to the candidates with the library's
 * own matcher, in natural order, so results are those of a scan.
 *
 * <p>A condition counts when its value is plain (see {@link KeyValues#normalize}), {$eq: plain} or
 * {$in: [plain…]}. Unique indexes are the library's own: they are asked only for non-null values
 * (a sparse one does not hold documents without its fields), for $in only on a single field, and
 * never once a document had an array under one of their fields, since the library's multikey
 * entries do not follow the matcher in every case (arrays of arrays); like MongoDB's multikey flag,
 * that stays set for the life of the collection object.
 */
final class IndexedQueries<P> {

    /** Beyond this many keys ($in lists, multiplied on a compound index) the lookup is left to a scan. */
    private static final int MAX_KEYS = 100_000;

    private final Set<String> pathsWithArrays = ConcurrentHashMap.newKeySet();

    /** Call for every document written (inserted, upserted, updated), before it is indexed. */
    void noteWritten(Document document, List<? extends Index<P>> indexes) {
        for (Index<P> index : indexes) {
            if (index.isUnique()) {
                noteArrays(document, index);
            }
        }
    }

    /**
     * Call when the library has added an index to a collection that may hold documents: its fields'
     * arrays are noted, and a unique index's twins are built from the documents if they are empty (an
     * h2 file opened again).
     */
    void noteIndexAdded(Index<P> index, Supplier<Stream<DocumentWithPosition<P>>> documents) {
        if (index.isUnique()) {
            documents.get().forEach(document -> noteArrays(document.getDocument(), index));
        }
        if (index instanceof TwinnedUniqueIndex<P> twinned) {
            twinned.fillTwins(documents.get());
        }
    }

    /** How a collection matches a query on given positions (its protected matchDocuments, bound to the request's skip, limit, batch and projection). */
    interface PositionMatcher<P> {
        QueryResult match(Document query, Iterable<P> positions, Document orderBy);
    }

    /**
     * A collection's queryDocuments: the library's own path ({@code library}) for what it serves itself,
     * a sorted walk or an equality plan where one serves ({@code matcher}; a plan's candidates sorted by
     * {@code scanOrder}, the order a scan visits them), else a scan ({@code scan}).
     */
    QueryResult answer(Document query, Document orderBy, int numberToSkip, int limit, List<? extends Index<P>> indexes,
                       Comparator<? super P> scanOrder, Supplier<QueryResult> library, Supplier<QueryResult> scan,
                       PositionMatcher<P> matcher) {
        if (libraryServes(query, indexes)) {
            return library.get();
        }
        Plan<P> plan = plan(query, indexes);
        Iterable<P> ordered = walkBeats(plan, numberToSkip, limit) ? sortedWalk(query, orderBy, limit, indexes) : null;
        if (ordered != null) { // already in the order asked for: matched without a sort, up to the limit
            return matcher.match(query, ordered, null);
        }
        if (plan == null) {
            return scan.get();
        }
        List<P> positions = new ArrayList<>(plan.positions());
        positions.sort(scanOrder);
        return matcher.match(plan.query(), positions, orderBy);
    }

    private void noteArrays(Document document, Index<P> index) {
        for (IndexKey key : index.getKeys()) {
            if (!pathsWithArrays.contains(key.getKey()) && KeyValues.crossesArray(document, key.getKey())) {
                pathsWithArrays.add(key.getKey());
            }
        }
    }

    /**
     * True when the library's own index path serves the query (it names exactly an index's fields):
     * that stays as it was, except for {field: {$in: [null, …]}} on a sparse index, which the library
     * answers from the index and so misses the documents without the field (MongoDB does not use a
     * sparse index for that query); those are scanned instead. A long $in list is left to {@link #plan}
     * too: the library looks each value up, then tests every document found against the whole list
     * again (4,096 names: 630-900 ms), where the plan's unique lookup answers the condition exactly.
     */
    boolean libraryServes(Document query, List<? extends Index<P>> indexes) {
        for (Index<P> index : indexes) {
            if (index.canHandle(query)) {
                return !(Boolean.TRUE.equals(index.toIndexDescription().get("sparse")) && inWithNull(query)) && !longIn(query);
            }
        }
        return false;
    }

    /** Beyond this many $in values the library's own lookup is left to {@link #plan}. */
    private static final int LIBRARY_IN_VALUES = 16;

    private static boolean longIn(Document query) {
        return query.values().stream().anyMatch(value -> value instanceof Document operators
            && operators.get("$in") instanceof Collection<?> values && values.size() > LIBRARY_IN_VALUES);
    }

    private static boolean inWithNull(Document query) {
        return query.values().stream().anyMatch(value -> value instanceof Document operators
            && operators.get("$in") instanceof Collection<?> values && values.stream().anyMatch(Missing::isNullOrMissing));
    }

    /**
     * The documents that may match ({@code positions}, in no order) and the part of the query left to
     * check on them. A unique index's lookup answers its conditions exactly (plain values of documents
     * without arrays under its fields), so those are dropped: a {_id: {$in: [thousands]}} is not
     * tested against every candidate again. Everything else is checked.
     */
    record Plan<P>(Supplier<Collection<P>> candidates, long count, Document query) {
        /** The candidates, looked up now. */
        Collection<P> positions() {
            return candidates.get();
        }
    }

    /** The plan for a query, or null when no index serves it. */
    Plan<P> plan(Document query, List<? extends Index<P>> indexes) {
        Map<String, Set<Object>> equalities = equalities(query);
        if (equalities.isEmpty()) {
            return null;
        }
        Index<P> best = null;
        List<List<Object>> bestKeys = null;
        long bestCount = Long.MAX_VALUE;
        for (Index<P> index : withPrefixes(indexes)) {
            List<List<Object>> keys = lookupKeys(index, equalities);
            if (keys == null) {
                continue;
            }
            // a unique index returns at most one document per key; ties go to the earlier index
            long count = index instanceof EqualityIndex<P> equality ? equality.count(keys) : keys.size();
            if (count < bestCount) {
                best = index;
                bestKeys = keys;
                bestCount = count;
            }
        }
        if (best == null) {
            return null;
        }
        if (best instanceof EqualityIndex<P> equality) {
            List<List<Object>> keys = bestKeys;
            return new Plan<>(() -> equality.candidates(keys), bestCount, query);
        }
        Document rest = new Document(query);
        Index<P> unique = best;
        List<List<Object>> keys = bestKeys;
        best.getKeys().forEach(indexKey -> rest.remove(indexKey.getKey()));
        return new Plan<>(() -> {
            Set<P> positions = new LinkedHashSet<>();
            for (List<Object> key : keys) {
                Document subQuery = new Document();
                List<IndexKey> indexKeys = unique.getKeys();
                for (int i = 0; i < indexKeys.size(); i++) {
                    subQuery.put(indexKeys.get(i).getKey(), key.get(i));
                }
                unique.getPositions(subQuery).forEach(positions::add);
            }
            return positions;
        }, bestCount, rest);
    }

    /** The indexes, each compound unique one followed by its non-unique twin that serves its first fields. */
    private static <P> List<Index<P>> withPrefixes(List<? extends Index<P>> indexes) {
        List<Index<P>> all = new ArrayList<>(indexes.size() + 2);
        for (Index<P> index : indexes) {
            all.add(index);
            if (index instanceof TwinnedUniqueIndex<P> twinned && twinned.prefixes() != null) {
                all.add(twinned.prefixes());
            }
        }
        return all;
    }

    /**
     * Whether a sorted walk ({@link #sortedWalk}) is worth trying: no equality plan, or one with more
     * candidates than twice the documents the page needs (all of them would be read and sorted).
     */
    private static boolean walkBeats(Plan<?> plan, int numberToSkip, int limit) {
        return limit > 0 && (plan == null || plan.count() > 2L * ((long) numberToSkip + limit));
    }

    /**
     * For a query sorted with a limit, by fields all ascending or all descending: the positions in
     * that order from a sorted twin ({@link SortedKeys}: a unique index's, sorted by its last field;
     * a non-unique compound index's that ends in _id, sorted by all fields but the first) whose sort
     * fields are the query's and on whose prefix fields the query holds one equality each (a plain
     * value or $eq) and nothing else but a range on the first sort field and a keyset $or over the
     * sort fields ({@link #onlyPrefixAndBound}), starting at the query's own bound on the first sort
     * field ($gt/$gte ascending, $lt/$lte descending) — or null. The caller matches the whole query on
     * them in this order without sorting, and stops at the limit.
     */
    Iterable<P> sortedWalk(Document query, Document orderBy, int limit, List<? extends Index<P>> indexes) {
        if (limit <= 0 || orderBy == null || orderBy.isEmpty()) {
            return null;
        }
        Boolean ascending = null;
        for (Object direction : orderBy.values()) {
            if (!(direction instanceof Number number) || Math.abs(number.doubleValue()) != 1
                || (ascending != null && ascending != number.doubleValue() > 0)) {
                return null; // another kind of sort, or mixed directions
            }
            ascending = number.doubleValue() > 0;
        }
        List<String> sortPaths = List.copyOf(orderBy.keySet());
        String first = sortPaths.get(0);
        Map<String, Set<Object>> equalities = equalities(query);
        for (Index<P> index : indexes) {
            SortedKeys<P> sorted = sortedTwin(index);
            if (sorted == null || !sorted.sortPaths().equals(sortPaths) || !sorted.usable()) {
                continue;
            }
            List<Object> prefix = new ArrayList<>();
            for (String path : sorted.prefixPaths()) {
                Set<Object> values = equalities.get(path);
                if (values == null || values.size() != 1 || query.get(path) instanceof Document operators && operators.containsKey("$in")) {
                    break;
                }
                prefix.add(values.iterator().next());
            }
            if (prefix.size() != sorted.prefixPaths().size() || !onlyPrefixAndBound(query, sorted)) {
                continue;
            }
            Object from = null;
            boolean inclusive = true;
            if (query.get(first) instanceof Document bound) {
                String exclusiveOperator = ascending ? "$gt" : "$lt";
                String inclusiveOperator = ascending ? "$gte" : "$lte";
                if (bound.containsKey(exclusiveOperator) && !bound.containsKey(inclusiveOperator)) {
                    from = bound.get(exclusiveOperator);
                    inclusive = false;
                } else if (bound.containsKey(inclusiveOperator) && !bound.containsKey(exclusiveOperator)) {
                    from = bound.get(inclusiveOperator);
                }
                if (from != null && KeyValues.normalize(from) == KeyValues.NOT_COMPARABLE) {
                    from = null; // an array, a document or a regular expression: walk from the first entry
                    inclusive = true;
                }
            }
            return sorted.positions(prefix, ascending, from, inclusive);
        }
        return null;
    }

    /** An index's sorted twin, if it has one. */
    private static <P> SortedKeys<P> sortedTwin(Index<P> index) {
        if (index instanceof TwinnedUniqueIndex<P> twinned) {
            return twinned.sorted();
        }
        if (index instanceof EqualityIndex<P> equality) {
            return equality.ordered();
        }
        return null;
    }

    private static final Set<String> RANGE_OPERATORS = Set.of("$gt", "$gte", "$lt", "$lte");

    /**
     * Whether the query holds nothing but the walk's prefix equalities, a range on its first sort
     * field, and a keyset {@code $or} whose branches name only sort fields (a page after a cursor:
     * {t: {$lte: T}, $or: [{t: {$lt: T}}, {t: T, _id: {$lt: I}}]}): then nearly every entry walked is a
     * result and the walk stops at the page. A further condition may match few of them (a sweeper's
     * {outbox.0: {$exists: true}} sorted by _id walked every service document, slower than the scan it
     * replaced), so such queries are left to the plan or the scan.
     */
    private static boolean onlyPrefixAndBound(Document query, SortedKeys<?> sorted) {
        String first = sorted.sortPaths().get(0);
        for (Map.Entry<String, Object> condition : query.entrySet()) {
            String key = condition.getKey();
            if (sorted.prefixPaths().contains(key)) {
                continue;
            }
            if (key.equals("$or") && condition.getValue() instanceof List<?> branches && !branches.isEmpty()
                && branches.stream().allMatch(branch -> branch instanceof Document terms && sorted.sortPaths().containsAll(terms.keySet()))) {
                continue;
            }
            if (!key.equals(first) || !(condition.getValue() instanceof Document bound) || !RANGE_OPERATORS.containsAll(bound.keySet())) {
                return false;
            }
        }
        return true;
    }

    /** Field → the normalized values it must equal (one, or several for $in). */
    private static Map<String, Set<Object>> equalities(Document query) {
        Map<String, Set<Object>> equalities = new LinkedHashMap<>();
        for (Map.Entry<String, Object> condition : query.entrySet()) {
            if (!KeyValues.isPlainPath(condition.getKey())) {
                continue; // $and, $or, $expr… are left to the matcher
            }
            Collection<?> values = equalityValues(condition.getValue());
            if (values == null) {
                continue;
            }
            Set<Object> keys = new LinkedHashSet<>();
            for (Object value : values) {
                keys.add(KeyValues.normalize(value));
            }
            if (!keys.contains(KeyValues.NOT_COMPARABLE)) {
                equalities.put(condition.getKey(), keys);
            }
        }
        return equalities;
    }

    private static Collection<?> equalityValues(Object condition) {
        if (!(condition instanceof Document operators)) {
            return Collections.singletonList(condition); // a plain value; an array or a regular expression is not comparable
        }
        if (operators.size() != 1) {
            return null;
        }
        if (operators.containsKey("$eq")) {
            return Collections.singletonList(operators.get("$eq"));
        }
        if (operators.get("$in") instanceof Collection<?> values) {
            return values;
        }
        return null; // an embedded document, or another operator
    }

    /**
     * The keys to look up in this index (one value per field, all combinations), or null if it cannot
     * serve. A unique index needs all its fields; an {@link EqualityIndex} serves its first fields.
     */
    private List<List<Object>> lookupKeys(Index<P> index, Map<String, Set<Object>> equalities) {
        if (!index.isUnique() && !(index instanceof EqualityIndex)) {
            return null; // an index of another kind (the library's EmptyIndex)
        }
        List<List<Object>> keys = List.of(List.of());
        for (IndexKey indexKey : index.getKeys()) {
            String path = indexKey.getKey();
            Set<Object> values = equalities.get(path);
            if (values == null || !KeyValues.isPlainPath(path)) {
                if (index.isUnique() || keys.get(0).isEmpty()) {
                    return null;
                }
                break; // a prefix
            }
            if (index.isUnique() && (values.contains(null) || pathsWithArrays.contains(path)
                || (values.size() > 1 && index.getKeys().size() > 1))) {
                return null;
            }
            if (values.isEmpty() || (long) keys.size() * values.size() > MAX_KEYS) {
                return null; // {$in: []} matches nothing here, but leave that to the matcher
            }
            List<List<Object>> extended = new ArrayList<>(keys.size() * values.size());
            for (List<Object> key : keys) {
                for (Object value : values) {
                    List<Object> longer = new ArrayList<>(key);
                    longer.add(value);
                    extended.add(longer);
                }
            }
            keys = extended;
        }
        return keys;
    }
}
