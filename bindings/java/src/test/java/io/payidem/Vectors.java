package io.payidem;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Base64;

/** The repository's shared test files, read in place (never copied). */
final class Vectors {
    private Vectors() {}

    /** The repository root, from the {@code payidem.repo} system property Maven sets. */
    static Path repo() {
        String repo = System.getProperty("payidem.repo");
        if (repo == null) {
            throw new IllegalStateException("the payidem.repo system property is not set (run through Maven)");
        }
        return Paths.get(repo);
    }

    /** core/tests/vectors/{@code name} as a JSON object. */
    static JsonObject load(String name) throws IOException {
        byte[] raw = Files.readAllBytes(repo().resolve("core/tests/vectors").resolve(name));
        return JsonParser.parseString(new String(raw, StandardCharsets.UTF_8)).getAsJsonObject();
    }

    /** A string member, or null when absent or JSON null. */
    static String str(JsonObject o, String key) {
        JsonElement e = o.get(key);
        return e == null || e.isJsonNull() ? null : e.getAsString();
    }

    static byte[] b64(String s) {
        return Base64.getDecoder().decode(s);
    }
}
