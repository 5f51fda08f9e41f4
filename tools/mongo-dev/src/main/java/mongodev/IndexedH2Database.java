package mongodev;

import java.util.List;

import org.h2.mvstore.MVMap;
import org.h2.mvstore.MVStore;

import de.bwaldvogel.mongo.MongoCollection;
import de.bwaldvogel.mongo.backend.CollectionOptions;
import de.bwaldvogel.mongo.backend.CursorRegistry;
import de.bwaldvogel.mongo.backend.DatabaseResolver;
import de.bwaldvogel.mongo.oplog.Oplog;
import io.netty.channel.Channel;
import de.bwaldvogel.mongo.backend.Index;
import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.backend.h2.H2Database;
import de.bwaldvogel.mongo.bson.Document;

/**
 * Opens {@link IndexedH2Collection}s on the same MVStore maps H2Database would, and builds non-unique
 * indexes as {@link EqualityIndex}es. Those live in memory only: when the file is opened again the
 * library re-adds every index listed in system.indexes, and an empty one is built from the documents.
 */
final class IndexedH2Database extends H2Database {

    /** H2Database's map name prefixes (package-private there). */
    private static final String DATA_PREFIX = "databases.";
    private static final String META_PREFIX = "meta.";

    private final MVStore store;

    IndexedH2Database(String databaseName, MVStore store, CursorRegistry cursorRegistry) {
        super(databaseName, store, cursorRegistry); // its initializeNamespacesAndIndexes() is deferred…
        this.store = store;
        super.initializeNamespacesAndIndexes(); // …to here, where openOrCreateCollection can use the store
    }

    @Override
    protected void initializeNamespacesAndIndexes() {
        // called by H2Database's constructor, before this.store is set: see the constructor
    }

    @Override
    protected MongoCollection<Object> openOrCreateCollection(String collectionName, CollectionOptions options) {
        String fullName = getFullCollectionNamespace(collectionName);
        MVMap<Object, Document> dataMap = store.openMap(DATA_PREFIX + fullName);
        MVMap<String, Object> metaMap = store.openMap(META_PREFIX + fullName);
        return new IndexedH2Collection(this, collectionName, options, dataMap, metaMap, cursorRegistry);
    }

    /** An aggregation led by {$match} is run on that match's index lookup ({@link IndexedAggregates}). */
    @Override
    public Document handleCommand(Channel channel, String command, Document query, DatabaseResolver resolver, Oplog oplog) {
        return IndexedAggregates.handle(this, command, query, resolver, oplog, () -> super.handleCommand(channel, command, query, resolver, oplog));
    }

    /** A unique index serves its first fields (compound) or a sort on its field (single, not sparse) too ({@link TwinnedUniqueIndex}). */
    @Override
    protected Index<Object> openOrCreateUniqueIndex(String collectionName, String indexName, List<IndexKey> keys,
                                                 boolean sparse) {
        return TwinnedUniqueIndex.around(super.openOrCreateUniqueIndex(collectionName, indexName, keys, sparse), keys, sparse);
    }

    @Override
    protected Index<Object> openOrCreateSecondaryIndex(String collectionName, String indexName, List<IndexKey> keys,
                                                       boolean sparse) {
        return new EqualityIndex<>(indexName, keys);
    }
}
