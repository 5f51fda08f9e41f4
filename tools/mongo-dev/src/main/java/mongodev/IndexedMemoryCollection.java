package mongodev;

import java.util.Comparator;

import de.bwaldvogel.mongo.MongoDatabase;
import de.bwaldvogel.mongo.backend.CollectionOptions;
import de.bwaldvogel.mongo.backend.CursorRegistry;
import de.bwaldvogel.mongo.backend.Index;
import de.bwaldvogel.mongo.backend.QueryResult;
import de.bwaldvogel.mongo.backend.memory.MemoryCollection;
import de.bwaldvogel.mongo.bson.Document;

/**
 * A memory collection whose queries use {@link IndexedQueries}. Positions are list indexes, and a scan
 * visits them in ascending order ($natural: -1 descending): the candidates are sorted the same way.
 */
final class IndexedMemoryCollection extends MemoryCollection {

    private final IndexedQueries<Integer> queries = new IndexedQueries<>();

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
