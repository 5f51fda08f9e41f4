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
 * A unique compound index that also serves equalities on its first fields, as MongoDB's does (a
 * service's rollouts by {serviceId} through the unique {serviceId, generation} index). The library's
 * unique index ({@code unique}: MemoryUniqueIndex, H2UniqueIndex) keeps uniqueness and answers
 * lookups of every field; every call is passed to it first, and then to an {@link EqualityIndex} over
 * the same fields ({@link #prefixes}), which {@link IndexedQueries} reads for a prefix of them. A
 * wrapper rather than a subclass because H2UniqueIndex cannot be subclassed outside its package.
 *
 * <p>The prefixes live in memory: an h2 file opened again holds the unique entries but not these,
 * so the collection fills them from its documents ({@link #fillPrefixes}).
 */
final class PrefixedUniqueIndex<P> extends Index<P> {

    private final Index<P> unique;
    private final EqualityIndex<P> prefixes;

    PrefixedUniqueIndex(Index<P> unique, List<IndexKey> keys, boolean sparse) {
        super(unique.getName(), keys, sparse);
        this.unique = unique;
        this.prefixes = new EqualityIndex<>(unique.getName(), keys);
    }

    /** The non-unique twin: read by IndexedQueries for equalities on the first fields only. */
    EqualityIndex<P> prefixes() {
        return prefixes;
    }

    /** Builds the prefixes from the collection's documents when they do not hold every document the unique index does. */
    synchronized void fillPrefixes(Stream<DocumentWithPosition<P>> documents) {
        if (prefixes.getCount() == unique.getCount()) {
            return;
        }
        prefixes.drop();
        documents.forEach(document -> prefixes.add(document.getDocument(), document.getPosition(), null));
    }

    @Override
    public synchronized void add(Document document, P position, MongoCollection<P> collection) {
        unique.add(document, position, collection); // throws on a duplicate key: the prefixes stay as they were
        prefixes.add(document, position, collection);
    }

    @Override
    public synchronized void updateInPlace(Document oldDocument, Document newDocument, P position, MongoCollection<P> collection)
        throws KeyConstraintError {
        unique.updateInPlace(oldDocument, newDocument, position, collection);
        prefixes.updateInPlace(oldDocument, newDocument, position, collection);
    }

    @Override
    public synchronized P remove(Document document) {
        prefixes.remove(document);
        return unique.remove(document);
    }

    @Override
    public synchronized void drop() {
        unique.drop();
        prefixes.drop();
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
