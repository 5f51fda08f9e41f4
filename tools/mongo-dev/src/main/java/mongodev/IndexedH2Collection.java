package mongodev;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

import org.h2.mvstore.MVMap;

import de.bwaldvogel.mongo.MongoDatabase;
import de.bwaldvogel.mongo.backend.CollectionOptions;
import de.bwaldvogel.mongo.backend.CursorRegistry;
import de.bwaldvogel.mongo.backend.DocumentWithPosition;
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
        if (queries.libraryServes(query, getIndexes())) {
            return super.queryDocuments(query, orderBy, numberToSkip, limit, batchSize, fieldSelector);
        }
        IndexedQueries.Plan<Object> plan = queries.plan(query, getIndexes());
        Iterable<Object> ordered = IndexedQueries.walkBeats(plan, numberToSkip, limit)
            ? queries.sortedWalk(query, orderBy, limit, getIndexes()) : null;
        if (ordered != null) { // already in the order asked for: matched without a sort, up to the limit
            return matchDocuments(query, ordered, null, numberToSkip, limit, batchSize, fieldSelector);
        }
        if (plan == null) {
            return matchDocuments(query, orderBy, numberToSkip, limit, batchSize, fieldSelector); // a scan
        }
        List<Object> positions = new ArrayList<>(plan.positions());
        positions.sort(isNaturalDescending(orderBy) ? ValueComparator.desc() : scanOrder);
        return matchDocuments(plan.query(), positions, orderBy, numberToSkip, limit, batchSize, fieldSelector);
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
            queries.noteIndexAdded(index, streamAllDocumentsWithPosition().map(DocumentWithPosition::getDocument));
            if (index instanceof TwinnedUniqueIndex<Object> prefixed) {
                prefixed.fillTwins(streamAllDocumentsWithPosition());
            }
        }
    }
}
