package io.payidem;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * An immutable value whose {@link #toString()} is generated from one field
 * table, {@code Name(label value, ...)}: the class states once which fields
 * its text shows, in which order and under which labels (never a secret or
 * a body), and every value class formats them the same way.
 *
 * @param <T> the value class itself
 */
abstract class Value<T extends Value<T>> {
    private final Fields<T> fields;

    Value(Fields<T> fields) {
        this.fields = fields;
    }

    /** The class's name and the fields its table lists, each as {@code label value}. */
    @Override
    public final String toString() {
        @SuppressWarnings("unchecked")
        T self = (T) this;
        return fields.text(self);
    }

    /**
     * The fields a value class shows in its text: its name, what stands
     * between a label and its value, and each label with the getter that
     * reads it.
     *
     * @param <T> the value class
     */
    static final class Fields<T> {
        private final String name;
        private final String separator;
        private final List<String> labels = new ArrayList<>();
        private final List<Function<T, ?>> getters = new ArrayList<>();

        private Fields(String name, String separator) {
            this.name = name;
            this.separator = separator;
        }

        /** A table for values named {@code name}, each label followed by {@code separator} and its value. */
        static <T> Fields<T> of(String name, String separator) {
            return new Fields<>(name, separator);
        }

        /** This table with one more field, shown under {@code label} as {@code getter} reads it. */
        Fields<T> add(String label, Function<T, ?> getter) {
            labels.add(label);
            getters.add(getter);
            return this;
        }

        String text(T value) {
            StringBuilder b = new StringBuilder(name).append('(');
            for (int i = 0; i < labels.size(); i++) {
                b.append(i == 0 ? "" : ", ").append(labels.get(i)).append(separator).append(getters.get(i).apply(value));
            }
            return b.append(')').toString();
        }
    }
}
