package io.payidem;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;

/**
 * One event of a client, as the core describes it (docs/metrics.md): an
 * attempt, a call's end or a failed journal write. Never holds a body or a
 * secret.
 */
public final class ClientEvent {
    private final String json;
    private final JsonObject fields;

    ClientEvent(String json) {
        this.json = json;
        this.fields = JsonParser.parseString(json).getAsJsonObject();
    }

    /** {@code attempt}, {@code call_ended} or {@code journal_failed}. */
    public String type() {
        return field("type");
    }

    /** {@code debug}, {@code info} or {@code warn}: the core's logging policy for it. */
    public String level() {
        return field("level");
    }

    /** A top-level field as text (numbers and booleans as written), or null when absent or null. */
    public String field(String name) {
        JsonElement e = fields.get(name);
        return e == null || e.isJsonNull() ? null : e.isJsonPrimitive() ? e.getAsString() : e.toString();
    }

    /** The whole event as the core's JSON object. */
    public String json() {
        return json;
    }

    @Override
    public String toString() {
        return json;
    }
}
