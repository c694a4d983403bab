package io.payidem;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.Collections;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The outbox in the application's own JDBC transaction against a throwaway
 * PostgreSQL server (ffi/tests-c/pg_server.sh, with a 127.0.0.1 listener for
 * JDBC): a committed row is sent once by takeOver, a rolled-back one never.
 */
class PostgresOutboxTest {
    private static Path dir;
    private static String url;
    private static int port;

    @BeforeAll
    static void startPostgres() throws Exception {
        // A free port can be taken by another process (a connection's
        // ephemeral port) before the server binds it: then start afresh on
        // another one.
        for (int attempt = 1;; attempt++) {
            try (ServerSocket s = new ServerSocket(0)) {
                port = s.getLocalPort();
            }
            dir = Files.createTempDirectory(java.nio.file.Paths.get("/tmp"), "payidem-java-pg-");
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
            ProcessBuilder pb = new ProcessBuilder(script(), "start", dir.toString()).redirectErrorStream(true);
            pb.environment().put("PAYIDEM_PG_TCP_PORT", Integer.toString(port));
            Process p = pb.start();
            String out = read(p.getInputStream()).trim();
            if (p.waitFor() == 0) {
                url = out.substring(out.lastIndexOf('\n') + 1);
                return;
            }
            stopPostgres();
            dir = null;
            if (attempt == 10 || !out.contains("Address already in use")) {
                throw new AssertionError("cannot start PostgreSQL (make pg-deps installs it): " + out);
            }
        }
    }

    @AfterAll
    static void stopPostgres() throws Exception {
        if (dir != null) {
            new ProcessBuilder(script(), "stop", dir.toString()).inheritIO().start().waitFor();
            new ProcessBuilder("rm", "-rf", dir.toString()).inheritIO().start().waitFor();
        }
    }

    private static String script() {
        return Vectors.repo().resolve("ffi/tests-c/pg_server.sh").toString();
    }

    private static Connection jdbc() throws Exception {
        Connection c = DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + port + "/postgres", "postgres",
                "");
        c.setAutoCommit(false);
        return c;
    }

    @Test
    void outboxCommittedWithTheBusinessRowIsSentOnceRolledBackNever() throws Exception {
        try (Mock m = new Mock(); PayidemClient c = m.client().journalPath(url).build();
                Connection db = jdbc()) {
            try (Statement st = db.createStatement()) {
                st.execute("CREATE TABLE IF NOT EXISTS app_orders (id text PRIMARY KEY)");
            }
            db.commit();
            String kept = Mock.orderId("java-outbox");
            String dropped = Mock.orderId("java-rollback");
            for (String order : new String[] {kept, dropped}) {
                try (PreparedStatement st = db.prepareStatement("INSERT INTO app_orders VALUES (?)")) {
                    st.setString(1, order);
                    st.executeUpdate();
                }
                Outbox row = c.outboxInsert(order, "POST", "/v1/payments", Mock.paymentBody(order, 4200), null,
                        Mock.statusPath(order));
                assertEquals(7, row.params().size());
                assertTrue(row.params().get(4) instanceof byte[], "the body is bytea");
                row.insert(db);
                if (order.equals(kept)) {
                    db.commit();
                } else {
                    db.rollback();
                }
            }
            assertEquals("pending", c.status(kept).state());
            assertFalse(c.status(dropped).found());
            try (Statement st = db.createStatement();
                    ResultSet rs = st.executeQuery("SELECT count(*) FROM app_orders")) {
                rs.next();
                assertEquals(1, rs.getInt(1));
            }
            db.commit();

            assertEquals(Collections.singletonList(kept), c.takeOver(10));
            assertEquals("succeeded", c.status(kept).state());
            Outcome out = c.resume(kept);
            assertEquals(201, out.httpStatus());
            assertEquals("create-" + kept, out.idempotencyKey());
            assertTrue(c.takeOver(10).isEmpty());
            m.assertOnePaymentEach(Collections.singletonList(kept));

            // The same order twice is the database's unique violation, in the caller's transaction.
            Outbox again = c.outboxInsert(kept, "POST", "/v1/payments", Mock.paymentBody(kept, 4200), null, null);
            assertThrows(java.sql.SQLException.class, () -> again.insert(db));
            db.rollback();
            assertEquals("limit", assertThrows(PayidemException.InvalidArgument.class, () -> c.takeOver(-1)).field());
        }
    }

    @Test
    void aLocalJournalHasNoOutbox() throws Exception {
        try (Mock m = new Mock(); PayidemClient c = m.client().build()) {
            assertEquals("journal", assertThrows(PayidemException.InvalidArgument.class,
                    () -> c.outboxInsert("o", "POST", "/v1/payments", new byte[0], null, null)).field());
        }
    }

    private static String read(InputStream in) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] buf = new byte[4096];
        for (int n; (n = in.read(buf)) > 0; ) {
            out.write(buf, 0, n);
        }
        return new String(out.toByteArray(), StandardCharsets.UTF_8);
    }
}
