package io.payidem;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The value classes' text, generated from each class's one field table. */
class ValueTest {
    /** A value with a secret that its table leaves out. */
    static final class Sample extends Value<Sample> {
        private static final Fields<Sample> FIELDS = Fields.<Sample>of("Sample", "=").add("name", s -> s.name)
                .add("count", s -> s.count);

        private final String name;
        private final int count;
        private final String secret;

        Sample(String name, int count, String secret) {
            super(FIELDS);
            this.name = name;
            this.count = count;
            this.secret = secret;
        }
    }

    @Test
    void theTextListsTheTablesFieldsInItsOrderAndNothingElse() {
        Sample s = new Sample("a", 3, "do_not_print");
        assertEquals("Sample(name=a, count=3)", s.toString());
        assertEquals("do_not_print", s.secret);
    }

    @Test
    void theValueClassesReadTheirFields() {
        assertEquals("OperationStatus(found true, state unknown, attempts 2)",
                new OperationStatus("unknown", 2).toString());
        assertEquals("OperationStatus(found false, state null, attempts 0)", new OperationStatus(null, 0).toString());
        assertEquals("ResumeResult(order o-1, outcome null, error null)",
                new PayidemClient.ResumeResult("o-1", null, null).toString());
    }
}
