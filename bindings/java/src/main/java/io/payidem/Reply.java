package io.payidem;

import java.util.Collections;
import java.util.List;
import java.util.Map;

/** What one attempt produced, reported to {@link Operation#handle}: a response, or why there is none. */
public final class Reply {
    // payidem_attempt_outcome numbers, named by the core (Names.attemptOutcomes(), from 1).
    static final int RESPONSE = 1;
    static final int NOT_SENT = 2;
    static final int SENT_NO_RESPONSE = 3;

    final int outcome;
    final int status;
    final List<Map.Entry<String, String>> headers;
    final byte[] body;
    final String reason;

    private Reply(int outcome, int status, List<Map.Entry<String, String>> headers, byte[] body, String reason) {
        this.outcome = outcome;
        this.status = status;
        this.headers = headers;
        this.body = body;
        this.reason = reason;
    }

    /** A response: its status, every header (in order) and its body. */
    public static Reply response(int status, List<Map.Entry<String, String>> headers, byte[] body) {
        return new Reply(RESPONSE, status, headers == null ? Collections.emptyList() : headers, Text.body(body), null);
    }

    /** Nothing reached the platform (e.g. the connection was refused); {@code reason} for people. */
    public static Reply notSent(String reason) {
        return new Reply(NOT_SENT, 0, Collections.emptyList(), new byte[0], reason);
    }

    /** Sent, or maybe sent, and no answer came (a timeout, a reset); {@code reason} for people. */
    public static Reply noResponse(String reason) {
        return new Reply(SENT_NO_RESPONSE, 0, Collections.emptyList(), new byte[0], reason);
    }

    @Override
    public String toString() {
        return outcome == RESPONSE ? "response " + status : (outcome == NOT_SENT ? "not sent: " : "no response: ")
                + reason;
    }
}
