package io.payidem.servlet.javax;

import io.payidem.Refusal;
import io.payidem.Verifier;
import io.payidem.servlet.VerifyingRequest;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.util.Map;
import javax.servlet.Filter;
import javax.servlet.FilterChain;
import javax.servlet.ReadListener;
import javax.servlet.ServletException;
import javax.servlet.ServletInputStream;
import javax.servlet.ServletRequest;
import javax.servlet.ServletResponse;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletRequestWrapper;
import javax.servlet.http.HttpServletResponse;

/**
 * A javax.servlet filter for platforms that verify payidem-signed requests:
 * each request is verified by the core ({@link Verifier}) before the
 * application runs; a refused one is answered with the core's
 * {@link Refusal} (status, headers, JSON body) and never reaches it. An
 * accepted one carries its {@link Verifier.Verified} in the request
 * attribute {@link VerifyingRequest#VERIFIED_ATTRIBUTE} (act on those
 * values, never on headers read again), with its body readable again.
 */
public final class PayidemVerifyingFilter implements Filter {
    private final Verifier verifier;
    private final long bodyLimit;

    /** A filter verifying with {@code verifier}, refusing bodies over {@code bodyLimit} bytes with 413. */
    public PayidemVerifyingFilter(Verifier verifier, long bodyLimit) {
        this.verifier = verifier;
        this.bodyLimit = bodyLimit;
    }

    /** A filter with the default body limit ({@link VerifyingRequest#DEFAULT_BODY_LIMIT}). */
    public PayidemVerifyingFilter(Verifier verifier) {
        this(verifier, VerifyingRequest.DEFAULT_BODY_LIMIT);
    }

    @Override
    public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain)
            throws IOException, ServletException {
        HttpServletRequest req = (HttpServletRequest) request;
        HttpServletResponse resp = (HttpServletResponse) response;
        VerifyingRequest v = VerifyingRequest.verify(verifier, req.getMethod(), req.getRequestURI(),
                req.getQueryString(), req.getHeaderNames(), req::getHeaders, req.getInputStream(), bodyLimit,
                System.currentTimeMillis() / 1000);
        Refusal refusal = v.refusal();
        if (refusal != null) {
            resp.setStatus(refusal.status());
            for (Map.Entry<String, String> h : refusal.headers()) {
                resp.addHeader(h.getKey(), h.getValue());
            }
            byte[] body = refusal.body();
            resp.setContentLength(body.length);
            resp.getOutputStream().write(body);
            return;
        }
        req.setAttribute(VerifyingRequest.VERIFIED_ATTRIBUTE, v.verified());
        chain.doFilter(new BodyAgain(req, v.body()), response);
    }

    /** The request with its verified body readable again. */
    private static final class BodyAgain extends HttpServletRequestWrapper {
        private final byte[] body;

        BodyAgain(HttpServletRequest request, byte[] body) {
            super(request);
            this.body = body;
        }

        @Override
        public ServletInputStream getInputStream() {
            ByteArrayInputStream in = new ByteArrayInputStream(body);
            return new ServletInputStream() {
                @Override
                public int read() {
                    return in.read();
                }

                @Override
                public int read(byte[] b, int off, int len) {
                    return in.read(b, off, len);
                }

                @Override
                public boolean isFinished() {
                    return in.available() == 0;
                }

                @Override
                public boolean isReady() {
                    return true;
                }

                @Override
                public void setReadListener(ReadListener listener) {
                    throw new IllegalStateException("the verified body is already in memory");
                }
            };
        }
    }
}
