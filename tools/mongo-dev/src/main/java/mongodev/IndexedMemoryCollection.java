package mongodev;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

import de.bwaldvogel.mongo.MongoDatabase;
import de.bwaldvogel.mongo.backend.CollectionOptions;
import de.bwaldvogel.mongo.backend.CursorRegistry;
import de.bwaldvogel.mongo.backend.DocumentWithPosition;
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
        if (queries.libraryServes(query, getIndexes())) {
            return super.queryDocuments(query, orderBy, numberToSkip, limit, batchSize, fieldSelector);
        }
        IndexedQueries.Plan<Integer> plan = queries.plan(query, getIndexes());
        Iterable<Integer> ordered = IndexedQueries.walkBeats(plan, numberToSkip, limit)
            ? queries.sortedWalk(query, orderBy, limit, getIndexes()) : null;
        if (ordered != null) { // already in the order asked for: matched without a sort, up to the limit
            return matchDocuments(query, ordered, null, numberToSkip, limit, batchSize, fieldSelector);
        }
        if (plan == null) {
            return matchDocuments(query, orderBy, numberToSkip, limit, batchSize, fieldSelector); // a scan
        }
        List<Integer> positions = new ArrayList<>(plan.positions());
        positions.sort(isNaturalDescending(orderBy) ? Comparator.reverseOrder() : Comparator.naturalOrder());
        return matchDocuments(plan.query(), positions, orderBy, numberToSkip, limit, batchSize, fieldSelector);
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
            queries.noteIndexAdded(index, streamAllDocumentsWithPosition().map(DocumentWithPosition::getDocument));
            if (index instanceof TwinnedUniqueIndex<Integer> prefixed) {
                prefixed.fillTwins(streamAllDocumentsWithPosition());
            }
        }
    }
}
