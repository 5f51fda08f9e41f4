package mongodev;

import org.h2.mvstore.MVStore;

import de.bwaldvogel.mongo.MongoDatabase;
import de.bwaldvogel.mongo.backend.h2.H2Backend;

/** The library's h2 backend with our index lookups (see {@link IndexedQueries}). */
final class IndexedH2Backend extends H2Backend {

    IndexedH2Backend(MVStore store) {
        super(store); // opens the databases already in the file, through openOrCreateDatabase below
    }

    @Override
    protected MongoDatabase openOrCreateDatabase(String databaseName) {
        return new IndexedH2Database(databaseName, getMvStore(), getCursorRegistry());
    }
}
