package io.payidem;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.List;

/**
 * The statement that records one operation as pending in a PostgreSQL
 * journal, built by the core, for the application's own transaction: commit
 * it with the business rows (both or neither); any client on that journal
 * then sends it with {@link PayidemClient#takeOver(int)}.
 */
public final class Outbox {
    /** payidem_param_style PAYIDEM_PARAMS_DOLLAR: {@code $1}, {@code $2}, ... */
    static final int PARAMS_DOLLAR = 1;

    private final String sql;
    private final List<Object> params;
    private final List<String> types;

    Outbox(String json) {
        JsonObject o = JsonParser.parseString(json).getAsJsonObject();
        sql = o.get("sql").getAsString();
        List<String> t = new ArrayList<>();
        for (JsonElement e : o.getAsJsonArray("param_types")) {
            t.add(e.getAsString());
        }
        JsonArray ps = o.getAsJsonArray("params");
        List<Object> p = new ArrayList<>();
        for (int i = 0; i < ps.size(); i++) {
            JsonElement e = ps.get(i);
            p.add(e.isJsonNull() ? null
                    : "bytea".equals(t.get(i)) ? Base64.getDecoder().decode(e.getAsString()) : e.getAsString());
        }
        params = Collections.unmodifiableList(p);
        types = Collections.unmodifiableList(t);
    }

    /** The statement with PostgreSQL placeholders ({@code $1} ...). */
    public String sql() {
        return sql;
    }

    /** The parameters in order: a String, a byte[] (bytea) or null (SQL NULL). */
    public List<Object> params() {
        return params;
    }

    /** Each parameter's SQL type: {@code text} or {@code bytea}. */
    public List<String> paramTypes() {
        return types;
    }

    /**
     * The statement for JDBC: each {@code $n} placeholder (which the core
     * writes once each, in order, outside any literal) as {@code ?}.
     */
    public String jdbcSql() {
        String s = sql;
        for (int i = params.size(); i >= 1; i--) {
            String placeholder = "$" + i;
            if (s.indexOf(placeholder) < 0 || s.indexOf(placeholder) != s.lastIndexOf(placeholder)) {
                throw new IllegalStateException("the core's outbox statement does not use " + placeholder + " once");
            }
            s = s.replace(placeholder, "?");
        }
        if (s.indexOf('$') >= 0) {
            throw new IllegalStateException("the core's outbox statement has placeholders past $" + params.size());
        }
        return s;
    }

    /**
     * Runs the statement on {@code connection} inside the caller's
     * transaction (this neither begins nor commits it).
     */
    public void insert(Connection connection) throws SQLException {
        try (PreparedStatement st = connection.prepareStatement(jdbcSql())) {
            for (int i = 0; i < params.size(); i++) {
                Object v = params.get(i);
                if (v == null) {
                    st.setNull(i + 1, "bytea".equals(types.get(i)) ? Types.BINARY : Types.VARCHAR);
                } else if (v instanceof byte[]) {
                    st.setBytes(i + 1, (byte[]) v);
                } else {
                    st.setString(i + 1, (String) v);
                }
            }
            st.executeUpdate();
        }
    }

    @Override
    public String toString() {
        return "Outbox(" + sql + ")";
    }
}
