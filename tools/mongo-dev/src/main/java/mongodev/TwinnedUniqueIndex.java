package mongodev;

import java.util.List;
import java.util.stream.Stream;

import de.bwaldvogel.mongo.MongoCollection;
import de.bwaldvogel.mongo.backend.DocumentWithPosition;
import de.bwaldvogel.mongo.backend.Index;
import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.exception.KeyConstraintError;

/**
 * A unique index that also serves what MongoDB's does beyond the library's exact lookups: a compound
 * one equalities on its first fields (a service's rollouts by {serviceId} through the unique
 * {serviceId, generation} index: {@link #prefixes}, an {@link EqualityIndex} over the same fields),
 * and a compound one or a single-field non-sparse one a sort on its last field after equalities on
 * the others ({@link #sorted}: a page of services by name, a service's rollouts by generation). The
 * library's unique index ({@code unique}: MemoryUniqueIndex, H2UniqueIndex) keeps uniqueness and
 * answers lookups of every field; every call is passed to it first, and then to the twin, which only
 * {@link IndexedQueries} reads. A wrapper rather than a subclass because H2UniqueIndex cannot be
 * subclassed outside its package.
 *
 * <p>The twins live in memory: an h2 file opened again holds the unique entries but not these, so
 * the collection fills them from its documents ({@link #fillTwins}).
 */
final class TwinnedUniqueIndex<P> extends Index<P> {

    private final Index<P> unique;
    /** For a compound index, else null. */
    private final EqualityIndex<P> prefixes;
    /** For a compound index or a single-field non-sparse one. */
    private final SortedKeys<P> sorted;

    TwinnedUniqueIndex(Index<P> unique, List<IndexKey> keys, boolean sparse) {
        super(unique.getName(), keys, sparse);
        this.unique = unique;
        this.prefixes = keys.size() > 1 ? new EqualityIndex<>(unique.getName(), keys, false) : null;
        List<String> paths = keys.stream().map(IndexKey::getKey).toList();
        this.sorted = twinned(keys, sparse) ? new SortedKeys<>(paths.subList(0, paths.size() - 1), paths.subList(paths.size() - 1, paths.size())) : null;
    }

    /** Whether the library's index of these keys gets a twin. */
    static boolean twinned(List<IndexKey> keys, boolean sparse) {
        return keys.size() > 1 || !sparse;
    }

    /** The library's unique index of these keys, wrapped when it gets a twin (the databases' openOrCreateUniqueIndex). */
    static <P> Index<P> around(Index<P> unique, List<IndexKey> keys, boolean sparse) {
        return twinned(keys, sparse) ? new TwinnedUniqueIndex<>(unique, keys, sparse) : unique;
    }

    /** The non-unique twin of a compound index (else null): read by IndexedQueries for equalities on the first fields only. */
    EqualityIndex<P> prefixes() {
        return prefixes;
    }

    /** The sorted twin: read by IndexedQueries for equalities on the first fields and a sort on the last one. */
    SortedKeys<P> sorted() {
        return sorted;
    }

    /** Builds the twin from the collection's documents when it is empty and the unique index is not (an h2 file opened again). */
    synchronized void fillTwins(Stream<DocumentWithPosition<P>> documents) {
        boolean twinEmpty = sorted.isEmpty() && (prefixes == null || prefixes.getCount() == 0);
        if (!twinEmpty || unique.isEmpty()) {
            return;
        }
        dropTwin();
        documents.forEach(document -> addToTwin(document.getDocument(), document.getPosition()));
    }

    private void addToTwin(Document document, P position) {
        if (prefixes != null) {
            prefixes.add(document, position, null);
        }
        sorted.add(document, position);
    }

    private void dropTwin() {
        if (prefixes != null) {
            prefixes.drop();
        }
        sorted.clear();
    }

    @Override
    public synchronized void add(Document document, P position, MongoCollection<P> collection) {
        unique.add(document, position, collection); // throws on a duplicate key: the twin stays as it was
        addToTwin(document, position);
    }

    @Override
    public synchronized void updateInPlace(Document oldDocument, Document newDocument, P position, MongoCollection<P> collection)
        throws KeyConstraintError {
        unique.updateInPlace(oldDocument, newDocument, position, collection);
        if (prefixes != null) {
            prefixes.updateInPlace(oldDocument, newDocument, position, collection);
        }
        sorted.add(newDocument, position);
    }

    @Override
    public synchronized P remove(Document document) {
        P position = unique.remove(document);
        if (prefixes != null) {
            prefixes.remove(document);
        }
        sorted.remove(document);
        return position;
    }

    @Override
    public synchronized void drop() {
        unique.drop();
        dropTwin();
    }

    @Override
    public P getPosition(Document document) {
        return unique.getPosition(document);
    }

    @Override
    public void checkAdd(Document document, MongoCollection<P> collection) {
        unique.checkAdd(document, collection);
    }

    @Override
    public void checkUpdate(Document oldDocument, Document newDocument, MongoCollection<P> collection) {
        unique.checkUpdate(oldDocument, newDocument, collection);
    }

    @Override
    public boolean canHandle(Document query) {
        return unique.canHandle(query);
    }

    @Override
    public Iterable<P> getPositions(Document query) {
        return unique.getPositions(query);
    }

    @Override
    public long getCount() {
        return unique.getCount();
    }

    @Override
    public boolean isEmpty() {
        return unique.isEmpty();
    }

    @Override
    public long getDataSize() {
        return unique.getDataSize();
    }

    @Override
    public boolean isUnique() {
        return unique.isUnique();
    }

    @Override
    public Document toIndexDescription() {
        return unique.toIndexDescription();
    }
}
