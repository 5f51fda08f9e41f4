package mongodev;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import de.bwaldvogel.mongo.MongoCollection;
import de.bwaldvogel.mongo.backend.Index;
import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.bson.Document;

/**
 * A non-unique (single-field or compound) index for equality lookups. mongo-java-server accepts such
 * indexes but does not build them (AbstractMongoDatabase.openOrCreateSecondaryIndex returns an
 * EmptyIndex); our databases return this one instead. It is kept up to date through the library's
 * Index calls (add, updateInPlace, remove, drop: every insert, update, upsert and delete) and read
 * only by {@link IndexedQueries}, so the library's own planner never uses it ({@link #canHandle}).
 *
 * <p>Like MongoDB's, it serves equalities on its first fields too (a prefix). It holds every document,
 * sparse or not: a document whose key it cannot tell (an array or a sub-document under one of the
 * paths, see {@link KeyValues#indexValues}) is a candidate for every lookup. Positions
 * are the collection's (list index for memory, _id for h2); calls come under the collection's lock,
 * and the methods are synchronized as well because the library's count() reads without that lock.
 *
 * <p>A compound one whose last field is _id holds its documents in order too ({@link #ordered}):
 * equality on its first field, sorted by the others (a service's releases newest first).
 */
final class EqualityIndex<P> extends Index<P> {

    private static final String ID_FIELD = "_id";

    private final List<String> paths;
    /** levels.get(m - 1): the documents by the values of the first m paths, so a prefix of the fields serves too. */
    private final List<Level<P>> levels = new ArrayList<>();
    /** Each document's values ({@link KeyValues#NOT_COMPARABLE} where the lookups cannot tell), to forget them. */
    private final Map<P, List<Object>> valuesByPosition = new HashMap<>();
    /** remove(document) is not told the position; the _id of a document never changes. */
    private final Map<Object, P> positionById = new HashMap<>();
    /** For a compound index ending in _id (no two documents share its key), else null. */
    private final SortedKeys<P> ordered;

    /** Documents by key, and those whose key cannot be told: candidates for every lookup. */
    private record Level<P>(Map<List<Object>, Set<P>> byKey, Set<P> unkeyed) {
    }

    EqualityIndex(String name, List<IndexKey> keys) {
        this(name, keys, true);
    }

    /** {@code ordering}: whether a compound index ending in _id keeps its documents in order too (not for a unique index's twin: it has its own). */
    EqualityIndex(String name, List<IndexKey> keys, boolean ordering) {
        // sparse = true as the library's EmptyIndex, so createIndex compares options as it did before
        // (hasSameOptions); it only changes how this index is described in an error message.
        super(name, keys, true);
        this.paths = keys.stream().map(IndexKey::getKey).toList();
        for (int i = 0; i < paths.size(); i++) {
            levels.add(new Level<>(new HashMap<>(), new HashSet<>()));
        }
        this.ordered = ordering && paths.size() > 1 && ID_FIELD.equals(paths.get(paths.size() - 1))
            ? new SortedKeys<>(paths.subList(0, 1), paths.subList(1, paths.size())) : null;
    }

    /** The documents sorted by all fields but the first, per value of the first (else null): read by IndexedQueries' sorted walks. */
    SortedKeys<P> ordered() {
        return ordered;
    }

    List<String> paths() {
        return paths;
    }

    /** How many candidates a lookup of these keys (normalized values of the first fields) would return. */
    synchronized long count(List<List<Object>> keys) {
        Level<P> level = levels.get(keys.get(0).size() - 1);
        long count = level.unkeyed().size();
        for (List<Object> key : keys) {
            count += level.byKey().getOrDefault(key, Set.of()).size();
        }
        return count;
    }

    /** Every document that can match these keys, and some that may not: the caller matches them all. */
    synchronized Set<P> candidates(List<List<Object>> keys) {
        Level<P> level = levels.get(keys.get(0).size() - 1);
        Set<P> positions = new HashSet<>(level.unkeyed());
        for (List<Object> key : keys) {
            positions.addAll(level.byKey().getOrDefault(key, Set.of()));
        }
        return positions;
    }

    @Override
    public synchronized void add(Document document, P position, MongoCollection<P> collection) {
        forget(position);
        List<Object> values = KeyValues.indexValues(document, paths);
        for (int m = 1; m <= paths.size(); m++) {
            List<Object> key = values.subList(0, m);
            Level<P> level = levels.get(m - 1);
            if (key.contains(KeyValues.NOT_COMPARABLE)) {
                level.unkeyed().add(position);
            } else {
                level.byKey().computeIfAbsent(new ArrayList<>(key), k -> new HashSet<>()).add(position);
            }
        }
        valuesByPosition.put(position, values);
        positionById.put(document.get(ID_FIELD), position);
        if (ordered != null) {
            ordered.add(document, position);
        }
    }

    @Override
    public synchronized void updateInPlace(Document oldDocument, Document newDocument, P position,
                                           MongoCollection<P> collection) {
        positionById.remove(oldDocument.get(ID_FIELD));
        add(newDocument, position, collection);
    }

    /** Returns null as the library's EmptyIndex did (allowed for a sparse index): the _id index tells the position. */
    @Override
    public synchronized P remove(Document document) {
        P position = positionById.remove(document.get(ID_FIELD));
        if (position != null) {
            forget(position);
        }
        if (ordered != null) {
            ordered.remove(document);
        }
        return null;
    }

    private void forget(P position) {
        List<Object> values = valuesByPosition.remove(position);
        if (values == null) {
            return;
        }
        for (int m = 1; m <= paths.size(); m++) {
            List<Object> key = values.subList(0, m);
            Level<P> level = levels.get(m - 1);
            if (key.contains(KeyValues.NOT_COMPARABLE)) {
                level.unkeyed().remove(position);
                continue;
            }
            Set<P> positions = level.byKey().get(key);
            positions.remove(position);
            if (positions.isEmpty()) {
                level.byKey().remove(key);
            }
        }
    }

    @Override
    public synchronized void drop() {
        for (Level<P> level : levels) {
            level.byKey().clear();
            level.unkeyed().clear();
        }
        valuesByPosition.clear();
        positionById.clear();
        if (ordered != null) {
            ordered.clear();
        }
    }

    @Override
    public synchronized long getCount() {
        return valuesByPosition.size();
    }

    @Override
    public long getDataSize() {
        return getCount(); // as the library's MemoryUniqueIndex
    }

    /** The _id index gives every position the library asks for (getSinglePosition skips nulls). */
    @Override
    public P getPosition(Document document) {
        return null;
    }

    @Override
    public void checkAdd(Document document, MongoCollection<P> collection) {
        // not unique: nothing to check
    }

    @Override
    public void checkUpdate(Document oldDocument, Document newDocument, MongoCollection<P> collection) {
        // not unique: nothing to check
    }

    /** Lookups go through IndexedQueries, which sees the whole query. */
    @Override
    public boolean canHandle(Document query) {
        return false;
    }

    @Override
    public Iterable<P> getPositions(Document query) {
        throw new UnsupportedOperationException("read through IndexedQueries");
    }
}
