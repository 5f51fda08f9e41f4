package mongodev;

import java.util.Comparator;

import org.h2.mvstore.MVMap;

import de.bwaldvogel.mongo.MongoDatabase;
import de.bwaldvogel.mongo.backend.CollectionOptions;
import de.bwaldvogel.mongo.backend.CursorRegistry;
import de.bwaldvogel.mongo.backend.Index;
import de.bwaldvogel.mongo.backend.QueryResult;
import de.bwaldvogel.mongo.backend.ValueComparator;
import de.bwaldvogel.mongo.backend.h2.H2Collection;
import de.bwaldvogel.mongo.bson.Document;

/**
 * An h2 collection whose queries use {@link IndexedQueries}. Positions are _id values; a scan visits
 * them in the data map's key order, or ValueComparator.desc() for $natural: -1 (H2Collection), and
 * the candidates are sorted the same way.
 */
final class IndexedH2Collection extends H2Collection {

    private final IndexedQueries<Object> queries = new IndexedQueries<>();
    private final Comparator<Object> scanOrder;

    IndexedH2Collection(MongoDatabase database, String collectionName, CollectionOptions options,
                        MVMap<Object, Document> dataMap, MVMap<String, Object> metaMap, CursorRegistry cursorRegistry) {
        super(database, collectionName, options, dataMap, metaMap, cursorRegistry);
        this.scanOrder = dataMap.getKeyType();
    }

    @Override
    protected QueryResult queryDocuments(Document query, Document orderBy, int numberToSkip, int limit, int batchSize,
                                         Document fieldSelector) {
        Comparator<Object> candidateOrder = isNaturalDescending(orderBy) ? ValueComparator.desc() : scanOrder;
        return queries.answer(query, orderBy, numberToSkip, limit, getIndexes(), candidateOrder,
            () -> super.queryDocuments(query, orderBy, numberToSkip, limit, batchSize, fieldSelector),
            () -> matchDocuments(query, orderBy, numberToSkip, limit, batchSize, fieldSelector), // a scan
            (matched, positions, order) -> matchDocuments(matched, positions, order, numberToSkip, limit, batchSize, fieldSelector));
    }

    @Override
    protected Object addDocumentInternal(Document document) {
        queries.noteWritten(document, getIndexes());
        return super.addDocumentInternal(document);
    }

    @Override
    protected void handleUpdate(Object position, Document oldDocument, Document newDocument) {
        queries.noteWritten(newDocument, getIndexes());
        super.handleUpdate(position, oldDocument, newDocument);
    }

    @Override
    public void addIndex(Index<Object> index) {
        super.addIndex(index);
        if (getIndexes().contains(index)) {
            queries.noteIndexAdded(index, this::streamAllDocumentsWithPosition);
        }
    }
}
