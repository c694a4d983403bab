package io.payidem.servlet.javax;

import static io.payidem.servlet.PayidemVerifyingFilterTest.proxy;
import static io.payidem.servlet.PayidemVerifyingFilterTest.readAll;
import static io.payidem.servlet.PayidemVerifyingFilterTest.request;
import static io.payidem.servlet.PayidemVerifyingFilterTest.response;

import io.payidem.servlet.PayidemVerifyingFilterTest.Api;
import io.payidem.servlet.PayidemVerifyingFilterTest.Exchange;
import java.io.ByteArrayInputStream;
import java.util.HashMap;
import java.util.Map;

/**
 * This namespace's filter run on a request and a response made of proxies
 * over this namespace's servlet API (the build makes the jakarta copy of
 * this file by renaming the namespace, as it does the filter).
 */
public final class FilterApi {
    private FilterApi() {}

    /** Runs the filter once. */
    public static final Api API = (v, limit, method, uri, headers, body) -> {
        Exchange x = new Exchange();
        ByteArrayInputStream bytes = new ByteArrayInputStream(body);
        javax.servlet.ServletInputStream in = new javax.servlet.ServletInputStream() {
            @Override public int read() { return bytes.read(); }
            @Override public boolean isFinished() { return bytes.available() == 0; }
            @Override public boolean isReady() { return true; }
            @Override public void setReadListener(javax.servlet.ReadListener l) { }
        };
        javax.servlet.ServletOutputStream out = new javax.servlet.ServletOutputStream() {
            @Override public void write(int b) { x.out.write(b); }
            @Override public boolean isReady() { return true; }
            @Override public void setWriteListener(javax.servlet.WriteListener l) { }
        };
        Map<String, Object> attributes = new HashMap<>();
        javax.servlet.http.HttpServletRequest req = (javax.servlet.http.HttpServletRequest) proxy(
                javax.servlet.http.HttpServletRequest.class, request(method, uri, headers, in, attributes));
        javax.servlet.http.HttpServletResponse resp = (javax.servlet.http.HttpServletResponse) proxy(
                javax.servlet.http.HttpServletResponse.class, response(x, out));
        new PayidemVerifyingFilter(v, limit).doFilter(req, resp, (rq, rs) -> {
            x.verified = rq.getAttribute(io.payidem.servlet.VerifyingRequest.VERIFIED_ATTRIBUTE);
            x.bodySeen = readAll(rq.getInputStream());
        });
        return x;
    };
}
