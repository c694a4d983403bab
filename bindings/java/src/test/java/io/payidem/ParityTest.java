package io.payidem;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Every table Java shares with the core is the core's: this fails when Java
 * lacks, misspells or adds an error code, or when a name list is not the
 * library's.
 */
class ParityTest {
    @Test
    void errorCodesAreTheCoresInOrder() {
        int max = Lib.payidem_result_max_error_code();
        List<String> core = new ArrayList<>();
        for (int n = 1; n <= max; n++) {
            core.add(Text.read(Lib.payidem_result_name(n)));
        }
        List<String> java = new ArrayList<>();
        for (ErrorCode c : ErrorCode.values()) {
            java.add(c.wireName());
        }
        assertEquals(core, java);
        for (ErrorCode c : ErrorCode.values()) {
            assertEquals(c.ordinal() + 1, c.number(), c.wireName());
            assertEquals(Lib.payidem_result_is_final(c.number()) != 0, c.isFinal(), c.wireName());
        }
    }

    @Test
    void everyCodeHasItsExceptionClass() {
        for (ErrorCode c : ErrorCode.values()) {
            PayidemException e = PayidemException.copy(c.number(), null);
            assertEquals(c, e.code());
            String simple = e.getClass().getSimpleName();
            String camel = c.wireName().replace("_", "");
            assertTrue(camel.startsWith(simple.toLowerCase(java.util.Locale.ROOT)),
                    c + " is thrown as " + simple);
            assertEquals(c.isFinal(), e.isFinal());
        }
        assertEquals(java.util.Arrays.asList("rejected", "idempotency_conflict", "key_expired").size(),
                java.util.Arrays.stream(ErrorCode.values()).filter(ErrorCode::isFinal).count());
    }

    @Test
    void verificationCodesAreVerificationExceptions() {
        int seen = 0;
        for (long i = 0; ; i++) {
            int number = Lib.payidem_refusal_verification_code_at(i);
            if (number == 0) {
                break;
            }
            PayidemException e = PayidemException.copy(number, null);
            if (e.code() != ErrorCode.INVALID_ARGUMENT) {
                assertTrue(e instanceof PayidemException.Verification, e.code() + " is no Verification");
            }
            seen++;
        }
        assertTrue(seen >= 8, "the library lists " + seen + " verification codes");
    }

    @Test
    void signedHeaderNamesAreTheLibrarys() {
        assertEquals(5, Names.signedHeaders().size());
        assertEquals("X-Api-Key", Names.signedHeaders().get(0));
        assertEquals("Idempotency-Key", Names.signedHeaders().get(4));
    }

    @Test
    void anUnknownResultNumberIsAnInternalError() {
        PayidemException e = PayidemException.copy(99, null);
        assertEquals(ErrorCode.INTERNAL_ERROR, e.code());
        assertTrue(e.getMessage().contains("99"), e.getMessage());
    }
}
