package io.payidem;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The value classes' text, generated from each class's one field table. */
class ValueTest {
    @Test
    void aTableShowsItsFieldsInItsOrderAndNothingElse() {
        Value.Fields<Map<String, String>> table = Value.Fields.<Map<String, String>>of("Sample", "=")
                .add("name", m -> m.get("name")).add("count", m -> m.get("count"));
        Map<String, String> sample = new HashMap<>();
        sample.put("secret", "do_not_print");
        sample.put("count", "3");
        sample.put("name", "a");
        assertEquals("Sample(name=a, count=3)", table.text(sample));
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
