package io.payidem;

import com.sun.jna.Pointer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.IntFunction;

/** The core's vocabularies, read from the loaded library (never copied here). */
public final class Names {
    private static final List<String> SIGNED_HEADERS = list(0, Lib::payidem_signed_header_name);

    private Names() {}

    /** The names of the signed headers in the protocol's order ({@code X-Api-Key}, ..., {@code Idempotency-Key}). */
    public static List<String> signedHeaders() {
        return SIGNED_HEADERS;
    }

    static String signedHeader(int index) {
        return SIGNED_HEADERS.get(index);
    }

    /** The journal states of an operation, from number 1 ({@code pending}, {@code in_flight}, ...). */
    public static List<String> operationStates() {
        return list(1, Lib::payidem_operation_state_name);
    }

    /** The attempt kinds, from number 1. */
    public static List<String> attemptKinds() {
        return list(1, Lib::payidem_attempt_kind_name);
    }

    /** The attempt outcomes, from number 1. */
    public static List<String> attemptOutcomes() {
        return list(1, Lib::payidem_attempt_outcome_name);
    }

    /** The next actions of the retry decision, from number 1. */
    public static List<String> nextActions() {
        return list(1, Lib::payidem_next_action_name);
    }

    /** The landed values, from number 0 ({@code no}, {@code maybe}, {@code yes}). */
    public static List<String> landed() {
        return list(0, Lib::payidem_landed_name);
    }

    /** The decision kinds, from number 1. */
    public static List<String> decisionKinds() {
        return list(1, Lib::payidem_decision_kind_name);
    }

    /** The library's version, e.g. {@code "0.1.0"}. */
    public static String libraryVersion() {
        return Text.read(Lib.payidem_version());
    }

    /** Where the native library was loaded from, and how it was checked. */
    public static String libraryOrigin() {
        Lib.ensureLoaded();
        return NativeLoader.origin();
    }

    /** Names of numbers first, first + 1, ... until the library gives NULL. */
    private static List<String> list(int first, IntFunction<Pointer> name) {
        List<String> out = new ArrayList<>();
        for (int i = first; ; i++) {
            String s = Text.read(name.apply(i));
            if (s == null) {
                return Collections.unmodifiableList(out);
            }
            out.add(s);
        }
    }
}
