package mongodev;

import java.io.IOException;
import java.io.InputStream;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;

import org.h2.mvstore.DataUtils;
import org.h2.mvstore.MVStore;
import org.h2.mvstore.MVStoreException;

import de.bwaldvogel.mongo.MongoBackend;
import de.bwaldvogel.mongo.MongoServer;

/**
 * The project's local development database: mongo-java-server on a chosen host and port.
 * The library's own mains bind only localhost:27017; tests need a free port and the service needs
 * to learn the real one, hence this launcher. Both backends are the library's, subclassed so that
 * queries use indexes as on MongoDB (IndexedQueries, EqualityIndex; see NOTES.md).
 *
 * <pre>
 * MongoDevServer [--host 127.0.0.1] [--port 0] [--backend memory|h2] [--file PATH]
 * </pre>
 *
 * Contract with tools/dev-database/localMongo.ts:
 * - prints exactly one line "LISTENING host:port" on stdout once bound (port 0 = a free port);
 * - or, when it cannot start for a reason the operator must act on, one line "REFUSED locked PATH"
 *   (another process holds the h2 file) or "REFUSED port-in-use HOST:PORT" on stdout, nothing on
 *   stderr, and exit code 3 (no stack trace: the parent turns it into one line for the operator);
 * - exits when stdin reaches EOF, so it dies with its Node parent even when that is SIGKILLed;
 * - on SIGTERM (or that EOF) closes the backend, which for h2 writes the last changes to the file.
 */
public final class MongoDevServer {

    /**
     * MVStore writes pending changes to the file in the background every autoCommitDelay ms (default
     * 1000). A shorter delay bounds what is lost if the JVM is killed without running the shutdown
     * hook (SIGKILL): a clean stop always closes the store and loses nothing.
     */
    private static final int H2_AUTO_COMMIT_DELAY_MS = 200;

    private MongoDevServer() {
    }

    public static void main(String[] args) {
        // Before any library class creates its logger: only warnings, on stderr. A client that goes
        // away without closing its sockets (a test worker ending) is normal here, yet the library logs
        // each reset as an ERROR with a stack trace.
        setDefaultProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        setDefaultProperty("org.slf4j.simpleLogger.log.de.bwaldvogel.mongo.wire.MongoExceptionHandler", "off");

        String host = "127.0.0.1";
        int port = 0;
        String backendName = "memory";
        String file = null;
        for (int i = 0; i < args.length; i += 2) {
            if (i + 1 >= args.length) {
                fail("missing value for " + args[i]);
            }
            String value = args[i + 1];
            switch (args[i]) {
                case "--host" -> host = value;
                case "--port" -> port = parsePort(value);
                case "--backend" -> backendName = value;
                case "--file" -> file = value;
                default -> fail("unknown argument " + args[i]);
            }
        }

        MongoBackend backend = switch (backendName) {
            case "memory" -> new IndexedMemoryBackend();
            case "h2" -> new IndexedH2Backend(openStore(file));
            default -> throw fail("unknown backend " + backendName + " (memory|h2)");
        };

        MongoServer server = new MongoServer(backend);
        try {
            server.bind(host, port);
        } catch (Exception e) {
            // Netty rethrows BindException undeclared, past MongoServer's own RuntimeException cleanup,
            // and its event loop threads would keep this JVM alive: shut down here, then exit.
            server.shutdownNow();
            if (causedBy(e, BindException.class)) {
                refuse("port-in-use " + host + ":" + port);
            }
            throw fail("cannot listen on " + host + ":" + port + ": " + e);
        }
        Runtime.getRuntime().addShutdownHook(new Thread(server::shutdownNow, "mongo-dev-shutdown"));

        InetSocketAddress address = server.getLocalAddress();
        System.out.println("LISTENING " + address.getHostString() + ":" + address.getPort());
        System.out.flush();

        exitOnStdinEof();
    }

    private static void setDefaultProperty(String key, String value) {
        if (System.getProperty(key) == null) {
            System.setProperty(key, value);
        }
    }

    private static MVStore openStore(String file) {
        if (file == null) {
            throw fail("--backend h2 needs --file PATH");
        }
        try {
            Path parent = Path.of(file).toAbsolutePath().getParent();
            if (parent != null) {
                Files.createDirectories(parent);
            }
        } catch (IOException e) {
            throw fail("cannot create the directory of " + file + ": " + e);
        }
        try {
            MVStore store = MVStore.open(file);
            store.setAutoCommitDelay(H2_AUTO_COMMIT_DELAY_MS);
            return store;
        } catch (MVStoreException e) {
            // Another server (usually a second `npm start` on the same DATA_DIR) holds the file lock.
            if (e.getErrorCode() == DataUtils.ERROR_FILE_LOCKED) {
                refuse("locked " + Path.of(file).toAbsolutePath());
            }
            throw fail("cannot open " + file + ": " + e.getMessage());
        }
    }

    /** Netty's threads keep the JVM alive; the end of stdin is the parent saying goodbye. */
    private static void exitOnStdinEof() {
        Thread watcher = new Thread(() -> {
            InputStream in = System.in;
            byte[] buffer = new byte[256];
            try {
                while (in.read(buffer) != -1) {
                    // Input carries no meaning; only its end does.
                }
            } catch (IOException e) {
                // A broken stdin means the parent is gone as well.
            }
            System.exit(0); // runs the shutdown hook
        }, "mongo-dev-stdin-watch");
        watcher.setDaemon(true);
        watcher.start();
    }

    private static int parsePort(String value) {
        try {
            int port = Integer.parseInt(value);
            if (port >= 0 && port <= 65535) {
                return port;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw fail("invalid port " + value);
    }

    private static boolean causedBy(Throwable error, Class<? extends Throwable> type) {
        for (Throwable cause = error; cause != null; cause = cause.getCause()) {
            if (type.isInstance(cause)) {
                return true;
            }
        }
        return false;
    }

    /** A start the operator must resolve (see the class comment): one protocol line, exit code 3. */
    private static void refuse(String reason) {
        System.out.println("REFUSED " + reason);
        System.out.flush();
        System.exit(3);
    }

    private static IllegalStateException fail(String message) {
        System.err.println("mongo-dev: " + message);
        System.exit(2);
        return new IllegalStateException(message); // unreachable; lets callers write `throw fail(...)`
    }
}
