package mongodev;

import java.util.List;

import de.bwaldvogel.mongo.backend.CollectionOptions;
import de.bwaldvogel.mongo.backend.CursorRegistry;
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

    @Override
    protected Index<Integer> openOrCreateSecondaryIndex(String collectionName, String indexName, List<IndexKey> keys,
                                                        boolean sparse) {
        return new EqualityIndex<>(indexName, keys);
    }
}
