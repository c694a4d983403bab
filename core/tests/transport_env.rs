//! Proxy environment variables are ignored unless the caller opts in, and
//! `HTTP_PROXY` is never read under CGI ("httpoxy"). One test in its own
//! binary: it changes the process environment.

mod support;

use payidem::Client;
use support::*;

fn clear() {
    for name in [
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
        "NO_PROXY",
        "no_proxy",
        "REQUEST_METHOD",
    ] {
        std::env::remove_var(name);
    }
}

#[test]
fn proxy_environment_variables_are_ignored_unless_opted_in() {
    let platform = Server::http(|_| created());
    // A proxy that would see the signed request (a plain-http tunnel).
    let proxy = TunnelProxy::to(platform.port);
    clear();
    for name in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "all_proxy",
    ] {
        std::env::set_var(name, proxy.url());
    }
    let client = Client::new(config(&platform.url("http")), SECRET).unwrap();
    let outcome = client.execute(&payment("ord-env-1")).unwrap();
    assert_eq!(outcome.response.body, created_body());
    assert!(proxy.connects().is_empty(), "{:?}", proxy.connects());
    assert_eq!(platform.seen().len(), 1);

    // Opted in: the environment's proxy is used.
    let mut opted = config(&platform.url("http"));
    opted.proxy_from_env = true;
    let client = Client::new(opted.clone(), SECRET).unwrap();
    client.execute(&payment("ord-env-2")).unwrap();
    assert_eq!(proxy.connects().len(), 1);

    // NO_PROXY exempts the host.
    std::env::set_var("NO_PROXY", "127.0.0.1");
    Client::new(opted.clone(), SECRET)
        .unwrap()
        .execute(&payment("ord-env-3"))
        .unwrap();
    assert_eq!(proxy.connects().len(), 1);
    std::env::remove_var("NO_PROXY");

    // Under CGI, HTTP_PROXY may come from a request's Proxy: header.
    clear();
    std::env::set_var("REQUEST_METHOD", "POST");
    std::env::set_var("HTTP_PROXY", proxy.url());
    Client::new(opted, SECRET)
        .unwrap()
        .execute(&payment("ord-env-4"))
        .unwrap();
    assert_eq!(proxy.connects().len(), 1);
    assert_eq!(platform.seen().len(), 4);
    clear();
}

fn created_body() -> Vec<u8> {
    br#"{"id":"pay_1","status":"succeeded"}"#.to_vec()
}
