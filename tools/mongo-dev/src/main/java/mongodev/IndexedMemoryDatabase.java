package mongodev;

import java.util.List;

import de.bwaldvogel.mongo.backend.CollectionOptions;
import de.bwaldvogel.mongo.backend.CursorRegistry;
import de.bwaldvogel.mongo.backend.DatabaseResolver;
import de.bwaldvogel.mongo.oplog.Oplog;
import io.netty.channel.Channel;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.backend.Index;
import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.backend.memory.MemoryCollection;
import de.bwaldvogel.mongo.backend.memory.MemoryDatabase;

/** Builds non-unique indexes ({@link EqualityIndex}) and opens {@link IndexedMemoryCollection}s. */
final class IndexedMemoryDatabase extends MemoryDatabase {

    IndexedMemoryDatabase(String databaseName, CursorRegistry cursorRegistry) {
        super(databaseName, cursorRegistry);
    }

    @Override
    protected MemoryCollection openOrCreateCollection(String collectionName, CollectionOptions options) {
        return new IndexedMemoryCollection(this, collectionName, options, cursorRegistry);
    }

    /** An aggregation led by {$match} is run on that match's index lookup ({@link IndexedAggregates}). */
    @Override
    public Document handleCommand(Channel channel, String command, Document query, DatabaseResolver resolver, Oplog oplog) {
        return IndexedAggregates.handle(this, command, query, resolver, oplog, () -> super.handleCommand(channel, command, query, resolver, oplog));
    }

    /** A unique index serves its first fields (compound) or a sort on its field (single, not sparse) too ({@link TwinnedUniqueIndex}). */
    @Override
    protected Index<Integer> openOrCreateUniqueIndex(String collectionName, String indexName, List<IndexKey> keys,
                                                 boolean sparse) {
        return TwinnedUniqueIndex.around(super.openOrCreateUniqueIndex(collectionName, indexName, keys, sparse), keys, sparse);
    }

    @Override
    protected Index<Integer> openOrCreateSecondaryIndex(String collectionName, String indexName, List<IndexKey> keys,
                                                        boolean sparse) {
        return new EqualityIndex<>(indexName, keys);
    }
}
