package mongodev;

import de.bwaldvogel.mongo.backend.memory.MemoryBackend;
import de.bwaldvogel.mongo.backend.memory.MemoryDatabase;

/** The library's memory backend with our index lookups (see {@link IndexedQueries}). */
final class IndexedMemoryBackend extends MemoryBackend {

    @Override
    public MemoryDatabase openOrCreateDatabase(String databaseName) {
        return new IndexedMemoryDatabase(databaseName, getCursorRegistry());
    }
}
