package mongodev;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.function.Supplier;

import de.bwaldvogel.mongo.MongoDatabase;
import de.bwaldvogel.mongo.backend.ArrayFilters;
import de.bwaldvogel.mongo.backend.CollectionOptions;
import de.bwaldvogel.mongo.backend.CursorRegistry;
import de.bwaldvogel.mongo.backend.Index;
import de.bwaldvogel.mongo.backend.QueryResult;
import de.bwaldvogel.mongo.backend.memory.MemoryCollection;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.oplog.Oplog;

/**
 * A memory collection whose queries use {@link IndexedQueries}. Positions are list indexes, and a scan
 * visits them in ascending order ($natural: -1 descending): the candidates are sorted the same way.
 *
 * <p>Its answers are snapshots. The library updates a stored document in place (its fields removed and
 * put one by one, under the collection's lock) and answered queries and findAndModify with that stored
 * object, which the wire encoder reads after the lock is released: a read concurrent with an update of
 * the same document could be sent half-updated, or fail to encode (ConcurrentModificationException).
 * Every document a client gets is now a copy of the stored one's fields taken under the lock (the
 * values need no copy: an update puts new values, it never changes the old ones). The library's own
 * reads inside a write (findAndModify, update, delete) still get the stored documents, which is how
 * they change them.
 */
final class IndexedMemoryCollection extends MemoryCollection {

    private final IndexedQueries<Integer> queries = new IndexedQueries<>();
    /** How deep this thread is in one of the library's writes, whose reads must return the stored documents. */
    private final ThreadLocal<int[]> writing = ThreadLocal.withInitial(() -> new int[1]);

    IndexedMemoryCollection(MongoDatabase database, String collectionName, CollectionOptions options,
                            CursorRegistry cursorRegistry) {
        super(database, collectionName, options, cursorRegistry);
    }

    @Override
    protected QueryResult queryDocuments(Document query, Document orderBy, int numberToSkip, int limit, int batchSize,
                                         Document fieldSelector) {
        Comparator<Integer> scanOrder = isNaturalDescending(orderBy) ? Comparator.reverseOrder() : Comparator.naturalOrder();
        return queries.answer(query, orderBy, numberToSkip, limit, getIndexes(), scanOrder,
            () -> super.queryDocuments(query, orderBy, numberToSkip, limit, batchSize, fieldSelector),
            () -> matchDocuments(query, orderBy, numberToSkip, limit, batchSize, fieldSelector), // a scan
            (matched, positions, order) -> matchDocuments(matched, positions, order, numberToSkip, limit, batchSize, fieldSelector));
    }

    @Override
    protected QueryResult createQueryResult(List<Document> matchedDocuments, int batchSize) {
        if (writing.get()[0] > 0) {
            return super.createQueryResult(matchedDocuments, batchSize);
        }
        List<Document> copies = new ArrayList<>(matchedDocuments.size());
        for (Document document : matchedDocuments) {
            copies.add(document.clone());
        }
        return super.createQueryResult(copies, batchSize);
    }

    /**
     * A count where an index serves the query: its candidates matched and counted, nothing copied out,
     * sorted or projected (the driver's countDocuments, through {@link IndexedAggregates}); else the library's.
     */
    @Override
    public synchronized int count(Document query, int skip, int limit) {
        IndexedQueries.Plan<Integer> plan = query == null || query.isEmpty() || queries.libraryServes(query, getIndexes())
            ? null : queries.plan(query, getIndexes());
        if (plan == null) {
            return super.count(query, skip, limit);
        }
        int matched = 0;
        for (Integer position : plan.positions()) {
            Document document = getDocument(position);
            if (document != null && documentMatchesQuery(document, plan.query())) {
                matched++;
            }
        }
        matched = Math.max(0, matched - skip);
        return limit > 0 ? Math.min(limit, matched) : matched;
    }

    @Override
    public synchronized Document findAndModify(Document query) {
        Document result = inWrite(() -> super.findAndModify(query));
        if (result.get("value") instanceof Document value) {
            result.put("value", value.clone());
        }
        return result;
    }

    @Override
    public synchronized Document updateDocuments(Document selector, Document updateQuery, ArrayFilters arrayFilters,
                                                 boolean isMulti, boolean isUpsert, Oplog oplog) {
        return inWrite(() -> super.updateDocuments(selector, updateQuery, arrayFilters, isMulti, isUpsert, oplog));
    }

    @Override
    public synchronized int deleteDocuments(Document selector, int limit, Oplog oplog) {
        return inWrite(() -> super.deleteDocuments(selector, limit, oplog));
    }

    private <T> T inWrite(Supplier<T> write) {
        int[] depth = writing.get();
        depth[0]++;
        try {
            return write.get();
        } finally {
            depth[0]--;
        }
    }

    @Override
    protected Integer addDocumentInternal(Document document) {
        queries.noteWritten(document, getIndexes());
        return super.addDocumentInternal(document);
    }

    @Override
    protected void handleUpdate(Integer position, Document oldDocument, Document newDocument) {
        queries.noteWritten(newDocument, getIndexes());
        super.handleUpdate(position, oldDocument, newDocument);
    }

    @Override
    public void addIndex(Index<Integer> index) {
        super.addIndex(index);
        if (getIndexes().contains(index)) {
            queries.noteIndexAdded(index, this::streamAllDocumentsWithPosition);
        }
    }
}
