//! The client against the SDK's stand-in host: redirects, errors, bodies.

use serde_json::{Value, json};

use super::*;
use crate::testing;

#[test]
fn get_json_decodes_a_success_and_names_the_url_on_failure() {
    testing::reset();
    testing::http::respond(
        "https://api.example.com/status",
        Response::new(200).with_json(&json!({"paused": true})),
    );
    let status: Value = get_json("https://api.example.com/status").unwrap();
    assert_eq!(status, json!({"paused": true}));
    let [request] = &testing::http::take_requests()[..] else {
        panic!("one request expected");
    };
    assert_eq!(request.header("Accept"), Some("application/json"));
    assert_eq!(request.method, Method::Get);

    testing::http::respond(
        "https://api.example.com/missing",
        Response::new(404).with_body("no such thing"),
    );
    let error = get_json::<Value>("https://api.example.com/missing").unwrap_err();
    assert_eq!(error.status(), Some(404));
    assert!(!error.is_retryable());
    assert_eq!(
        error.to_string(),
        "GET https://api.example.com/missing: unexpected status 404: no such thing"
    );

    testing::http::respond(
        "https://api.example.com/text",
        Response::new(200).with_body("not json"),
    );
    let error = get_json::<Value>("https://api.example.com/text").unwrap_err();
    assert!(matches!(error.kind(), HttpErrorKind::Decode(_)), "{error}");
    assert!(
        error
            .to_string()
            .starts_with("GET https://api.example.com/text: the body would not decode"),
        "{error}"
    );
}

#[test]
fn post_json_sends_the_body_and_any_status_is_a_response() {
    testing::reset();
    testing::http::respond("https://hooks.example.com/", Response::new(500));
    let response = post_json("https://hooks.example.com/alerts", &json!({"pod": "web-0"})).unwrap();
    assert_eq!(response.status, 500);
    assert!(!response.is_success());
    assert_eq!(response.url(), "https://hooks.example.com/alerts");
    let error = response.error_for_status().unwrap_err();
    assert!(error.is_retryable());
    assert_eq!(
        error.to_string(),
        "POST https://hooks.example.com/alerts: unexpected status 500"
    );
    let [request] = &testing::http::take_requests()[..] else {
        panic!("one request expected");
    };
    assert_eq!(request.json(), json!({"pod": "web-0"}));
    assert_eq!(request.header("content-type"), Some("application/json"));
}

#[test]
fn unscripted_requests_get_404_or_the_hosts_denial() {
    testing::reset();
    assert_eq!(get("http://nowhere.example/").unwrap().status, 404);
    testing::http::deny_unscripted();
    let error = get("http://nowhere.example/x").unwrap_err();
    assert!(error.is_denied());
    assert!(!error.is_retryable());
    assert!(
        error
            .to_string()
            .starts_with("GET http://nowhere.example/x: denied by the host (HTTP-request-denied)"),
        "{error}"
    );
}

#[test]
fn see_other_and_found_turn_into_a_get_without_body() {
    for status in [301, 302, 303] {
        testing::reset();
        testing::http::respond_once(
            "https://a.example/submit",
            Response::new(status).with_header("location", "/done?id=7"),
        );
        testing::http::respond("https://a.example/done", Response::new(200).with_body("ok"));
        let response = Request::post("https://a.example/submit")
            .header("content-type", "text/plain")
            .header("x-keep", "1")
            .body("payload")
            .send()
            .unwrap();
        assert_eq!((response.status, response.text().as_ref()), (200, "ok"));
        assert_eq!(response.url(), "https://a.example/done?id=7");
        let requests = testing::http::take_requests();
        assert_eq!(requests.len(), 2);
        assert_eq!(requests[1].method, Method::Get, "after {status}");
        assert_eq!(requests[1].url, "https://a.example/done?id=7");
        assert!(requests[1].body.is_empty());
        assert_eq!(requests[1].header("content-type"), None);
        assert_eq!(requests[1].header("x-keep"), Some("1"));
    }
}

#[test]
fn temporary_and_permanent_redirects_keep_method_and_body() {
    for status in [307, 308] {
        testing::reset();
        testing::http::respond_once(
            "https://a.example/v1/x",
            Response::new(status).with_header("location", "../v2/x"),
        );
        testing::http::respond("https://a.example/v2/x", Response::new(201));
        let response = Request::put("https://a.example/v1/x")
            .body("payload")
            .send()
            .unwrap();
        assert_eq!(response.status, 201);
        let requests = testing::http::take_requests();
        assert_eq!(requests[1].method, Method::Put, "after {status}");
        assert_eq!(requests[1].url, "https://a.example/v2/x");
        assert_eq!(requests[1].body, b"payload");
    }
}

#[test]
fn a_redirect_to_an_ungranted_origin_fails_with_the_hosts_denial() {
    testing::reset();
    testing::http::grant("https://hooks.example.com:443");
    testing::http::respond(
        "https://hooks.example.com/",
        Response::new(302).with_header("location", "https://evil.example/steal"),
    );
    testing::http::respond("https://evil.example/", Response::new(200));
    let error = post_json("https://hooks.example.com/alerts", &json!({})).unwrap_err();
    assert!(error.is_denied());
    assert_eq!(error.url(), "https://evil.example/steal");
    assert_eq!(error.method(), Some(&Method::Get));
    assert_eq!(
        testing::http::take_requests().len(),
        2,
        "both hops were tried"
    );
}

#[test]
fn a_hop_to_another_origin_drops_credentials() {
    testing::reset();
    testing::http::respond(
        "https://a.example/",
        Response::new(307).with_header("location", "https://b.example/x"),
    );
    testing::http::respond("https://b.example/", Response::new(200));
    Request::get("https://a.example/")
        .header("Authorization", "Bearer t")
        .header("cookie", "c=1")
        .header("x-trace", "7")
        .send()
        .unwrap();
    let requests = testing::http::take_requests();
    assert_eq!(requests[0].header("authorization"), Some("Bearer t"));
    assert_eq!(requests[1].header("authorization"), None);
    assert_eq!(requests[1].header("cookie"), None);
    assert_eq!(requests[1].header("x-trace"), Some("7"));
}

#[test]
fn redirects_are_bounded() {
    testing::reset();
    testing::http::respond(
        "https://loop.example/",
        Response::new(302).with_header("location", "/again"),
    );
    let error = get("https://loop.example/").unwrap_err();
    assert_eq!(error.kind(), &HttpErrorKind::TooManyRedirects(5));
    assert_eq!(
        testing::http::take_requests().len(),
        6,
        "the first and 5 redirects"
    );

    let response = Request::get("https://loop.example/")
        .max_redirects(0)
        .send()
        .unwrap();
    assert_eq!(response.status, 302);
    assert_eq!(response.header("location"), Some("/again"));

    testing::http::respond("https://nolocation.example/", Response::new(301));
    assert_eq!(get("https://nolocation.example/").unwrap().status, 301);

    testing::http::respond(
        "https://badlocation.example/",
        Response::new(301).with_header("location", "ftp://x/"),
    );
    let error = get("https://badlocation.example/").unwrap_err();
    assert!(matches!(error.kind(), HttpErrorKind::InvalidUrl(reason) if reason.contains("ftp")));
}

#[test]
fn invalid_urls_and_bodies_fail_before_sending() {
    testing::reset();
    let error = get("hooks.example.com/x").unwrap_err();
    assert!(matches!(error.kind(), HttpErrorKind::InvalidUrl(_)));
    assert_eq!(
        error.to_string(),
        "GET hooks.example.com/x: invalid URL (not an absolute http:// or https:// URL)"
    );
    let map: std::collections::BTreeMap<(u8, u8), u8> = [((1, 2), 3)].into();
    let error = post_json("https://a.example/", &map).unwrap_err();
    assert!(
        matches!(error.kind(), HttpErrorKind::InvalidRequest(_)),
        "{error}"
    );
    assert!(testing::http::take_requests().is_empty());
}

#[test]
fn bodies_over_the_limit_are_too_large() {
    testing::reset();
    testing::http::respond(
        "https://big.example/",
        Response::new(200).with_body(vec![b'x'; 100]),
    );
    let error = Request::get("https://big.example/")
        .max_response_bytes(99)
        .send()
        .unwrap_err();
    assert!(
        matches!(error.kind(), HttpErrorKind::TooLarge(_)),
        "{error}"
    );
    let response = Request::get("https://big.example/")
        .max_response_bytes(100)
        .send()
        .unwrap();
    assert_eq!(response.body.len(), 100);
}

#[test]
fn scripted_failures_and_patterns() {
    testing::reset();
    testing::http::fail(
        "https://*.example/slow*",
        HttpErrorKind::Timeout("scripted".into()),
    );
    testing::http::fail_once(
        "https://a.example/",
        HttpErrorKind::Connection("refused".into()),
    );
    let error = get("https://a.example/slow").unwrap_err();
    assert_eq!(
        error.to_string(),
        "GET https://a.example/slow: connection failed (refused)"
    );
    assert!(error.is_retryable());
    assert!(get("https://b.example/slowly").unwrap_err().is_timeout());
    assert_eq!(get("https://b.example/fast").unwrap().status, 404);
}

#[test]
fn json_bodies_keep_an_explicit_content_type() {
    testing::reset();
    Request::post("https://a.example/")
        .header("Content-Type", "application/merge-patch+json")
        .json(&json!({"a": 1}))
        .timeout(Duration::from_secs(1))
        .send()
        .unwrap();
    let [request] = &testing::http::take_requests()[..] else {
        panic!("one request expected");
    };
    assert_eq!(request.headers.len(), 1);
    assert_eq!(request.timeouts, [Some(Duration::from_secs(1)); 3]);
    assert_eq!(
        request.header("content-type"),
        Some("application/merge-patch+json")
    );
}
