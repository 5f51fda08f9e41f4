package mongodev;

import java.util.List;
import java.util.Set;
import java.util.function.Supplier;

import de.bwaldvogel.mongo.MongoCollection;
import de.bwaldvogel.mongo.MongoDatabase;
import de.bwaldvogel.mongo.backend.DatabaseResolver;
import de.bwaldvogel.mongo.backend.aggregation.Aggregation;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.oplog.Oplog;

/**
 * Runs an aggregation that starts with {$match} on the documents the collection's query finds, so
 * that the match is served from an index ({@link IndexedQueries}) as MongoDB's is: the library
 * itself runs every pipeline on a scan of the whole collection, and the driver's countDocuments is
 * such a pipeline ({$match}, {$group}). Only pipelines of stages that read and reshape documents are
 * taken, and only commands without options beyond the driver's usual ones; everything else is left
 * to the library (null). The answer is the library's: the whole result in the first batch.
 */
final class IndexedAggregates {

    private static final Set<String> STAGES = Set.of("$match", "$group", "$count", "$project", "$limit", "$skip", "$sort",
        "$addFields", "$set", "$unset");
    private static final Set<String> COMMAND_FIELDS = Set.of("aggregate", "pipeline", "cursor", "$db", "lsid", "$clusterTime",
        "$readPreference", "readConcern", "maxTimeMS", "comment", "txnNumber", "autocommit", "startTransaction");

    private IndexedAggregates() {
    }

    /** A database's handleCommand: an aggregation this class takes, else whatever the library answers ({@code library}). */
    static Document handle(MongoDatabase database, String command, Document query, DatabaseResolver resolver, Oplog oplog,
                           Supplier<Document> library) {
        Document answer = "aggregate".equals(command) ? run(database, database.getDatabaseName(), query, resolver, oplog) : null;
        return answer != null ? answer : library.get();
    }

    /** The command's answer, or null when the library should run it. */
    private static Document run(MongoDatabase database, String namespace, Document command, DatabaseResolver resolver, Oplog oplog) {
        if (!(command.get("aggregate") instanceof String collectionName) || !COMMAND_FIELDS.containsAll(command.keySet())) {
            return null;
        }
        List<Document> pipeline = Aggregation.parse(command.get("pipeline"));
        if (pipeline.isEmpty() || !(pipeline.get(0).get("$match") instanceof Document match)
            || !pipeline.stream().allMatch(stage -> stage.size() == 1 && STAGES.contains(stage.keySet().iterator().next()))) {
            return null;
        }
        MongoCollection<?> collection = database.resolveCollection(collectionName, false);
        if (collection == null) {
            return null;
        }
        Integer counted = countOf(collection, match, pipeline);
        List<Document> result;
        if (counted != null) {
            Document group = new Document();
            group.put("_id", Integer.valueOf(1));
            group.put("n", counted);
            result = counted == 0 ? List.of() : List.of(group);
        } else {
            Aggregation rest = Aggregation.fromPipeline(pipeline.subList(1, pipeline.size()), resolver, database, collection, oplog);
            rest.validate(command);
            result = rest.runStages(collection.handleQueryAsStream(match));
        }
        Document cursor = new Document();
        cursor.put("id", Long.valueOf(0));
        cursor.put("ns", namespace + "." + collectionName);
        cursor.put("firstBatch", result);
        Document answer = new Document();
        answer.put("cursor", cursor);
        answer.put("ok", 1.0);
        return answer;
    }

    /**
     * The driver's countDocuments ({$match}, then optionally {$skip: n} and {$limit: n > 0}, then
     * {$group: {_id: 1, n: {$sum: 1}}}), counted by the collection under its lock — the matching documents
     * counted, not copied out, streamed and grouped, as MongoDB counts index keys — else null.
     */
    private static Integer countOf(MongoCollection<?> collection, Document match, List<Document> pipeline) {
        int last = pipeline.size() - 1;
        if (last < 1 || last > 3 || !isCountGroup(pipeline.get(last).get("$group"))) {
            return null;
        }
        int skip = 0;
        int limit = 0;
        for (Document stage : pipeline.subList(1, last)) {
            if (stage.get("$skip") instanceof Integer n && n >= 0 && skip == 0 && limit == 0) {
                skip = n;
            } else if (stage.get("$limit") instanceof Integer n && n > 0 && limit == 0) {
                limit = n;
            } else {
                return null;
            }
        }
        synchronized (collection) {
            return collection.count(match, skip, limit);
        }
    }

    private static boolean isCountGroup(Object group) {
        return group instanceof Document g && g.size() == 2 && g.get("_id") instanceof Integer id && id == 1
            && g.get("n") instanceof Document sum && sum.size() == 1 && sum.get("$sum") instanceof Integer one && one == 1;
    }
}
