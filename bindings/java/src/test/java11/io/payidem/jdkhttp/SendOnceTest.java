package io.payidem.jdkhttp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Flow;
import org.junit.jupiter.api.Test;

/** An operation's body goes out once: a second subscription (the JDK resending) fails before any byte. */
class SendOnceTest {
    /** Collects what a subscription delivers. */
    static final class Sink implements Flow.Subscriber<ByteBuffer> {
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        Throwable error;
        boolean complete;

        @Override
        public void onSubscribe(Flow.Subscription s) {
            s.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(ByteBuffer b) {
            byte[] a = new byte[b.remaining()];
            b.get(a);
            bytes.write(a, 0, a.length);
        }

        @Override
        public void onError(Throwable t) {
            error = t;
        }

        @Override
        public void onComplete() {
            complete = true;
        }
    }

    @Test
    void theSecondSubscriptionFailsWithoutAByte() {
        byte[] body = "{\"order_id\":\"o1\",\"amount\":1}".getBytes(StandardCharsets.UTF_8);
        PayidemJdkHttp.SendOnce once = new PayidemJdkHttp.SendOnce(body);
        assertEquals(body.length, once.contentLength());
        Sink first = new Sink();
        once.subscribe(first);
        assertTrue(first.complete);
        assertNull(first.error);
        assertEquals(new String(body, StandardCharsets.UTF_8), first.bytes.toString(StandardCharsets.UTF_8));
        Sink second = new Sink();
        once.subscribe(second);
        assertEquals(0, second.bytes.size(), "a resend delivered bytes");
        assertTrue(second.error != null && second.error.getMessage().contains("refused to send a signed attempt again"),
                String.valueOf(second.error));
    }
}
