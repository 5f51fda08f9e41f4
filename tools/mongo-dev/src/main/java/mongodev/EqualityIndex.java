package mongodev;

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
 * <p>It holds every document, sparse or not: a document whose key {@link KeyValues#indexKey} cannot
 * tell (an array or a sub-document under one of the paths) is a candidate for every lookup. Positions
 * are the collection's (list index for memory, _id for h2); calls come under the collection's lock,
 * and the methods are synchronized as well because the library's count() reads without that lock.
 */
final class EqualityIndex<P> extends Index<P> {

    private static final String ID_FIELD = "_id";
    private static final List<Object> UNKEYED = List.of();

    private final List<String> paths;
    private final Map<List<Object>, Set<P>> positionsByKey = new HashMap<>();
    private final Set<P> unkeyed = new HashSet<>();
    private final Map<P, List<Object>> keyByPosition = new HashMap<>();
    /** remove(document) is not told the position; the _id of a document never changes. */
    private final Map<Object, P> positionById = new HashMap<>();

    EqualityIndex(String name, List<IndexKey> keys) {
        // sparse = true as the library's EmptyIndex, so createIndex compares options as it did before
        // (hasSameOptions); it only changes how this index is described in an error message.
        super(name, keys, true);
        this.paths = keys.stream().map(IndexKey::getKey).toList();
    }

    List<String> paths() {
        return paths;
    }

    /** How many candidates a lookup of these keys (normalized, one per path) would return. */
    synchronized long count(List<List<Object>> keys) {
        long count = unkeyed.size();
        for (List<Object> key : keys) {
            count += positionsByKey.getOrDefault(key, Set.of()).size();
        }
        return count;
    }

    /** Every document that can match these keys, and some that may not: the caller matches them all. */
    synchronized Set<P> candidates(List<List<Object>> keys) {
        Set<P> positions = new HashSet<>(unkeyed);
        for (List<Object> key : keys) {
            positions.addAll(positionsByKey.getOrDefault(key, Set.of()));
        }
        return positions;
    }

    @Override
    public synchronized void add(Document document, P position, MongoCollection<P> collection) {
        forget(position);
        List<Object> key = KeyValues.indexKey(document, paths);
        if (key == null) {
            unkeyed.add(position);
            key = UNKEYED;
        } else {
            positionsByKey.computeIfAbsent(key, k -> new HashSet<>()).add(position);
        }
        keyByPosition.put(position, key);
        positionById.put(document.get(ID_FIELD), position);
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
        return null;
    }

    private void forget(P position) {
        List<Object> key = keyByPosition.remove(position);
        if (key == null) {
            return;
        }
        if (key == UNKEYED) {
            unkeyed.remove(position);
            return;
        }
        Set<P> positions = positionsByKey.get(key);
        positions.remove(position);
        if (positions.isEmpty()) {
            positionsByKey.remove(key);
        }
    }

    @Override
    public synchronized void drop() {
        positionsByKey.clear();
        unkeyed.clear();
        keyByPosition.clear();
        positionById.clear();
    }

    @Override
    public synchronized long getCount() {
        return keyByPosition.size();
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
