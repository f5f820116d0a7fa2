"""The HTTP client's semantics against the stand-in host (the transport
over wasi:http is exercised by building a plugin and replaying it):
redirects, what crosses origins, errors, limits; and urllib on top."""

import urllib.error
import urllib.request

import pytest

from herald_sdk import http, testing
from herald_sdk.http import HttpError, Response

HOOK = "https://hooks.example.com/alerts"


def test_a_post_is_recorded_and_answered():
    testing.http.respond("https://hooks.example.com/", Response(202, "accepted", {"X-Id": "7"}))
    response = http.post_json(HOOK, {"text": "hi"}, headers={"authorization": "Bearer t"}, timeout=2)
    assert (response.status, response.ok, response.text, response.header("x-id")) == (202, True, "accepted", "7")
    assert (response.method, response.url) == ("POST", HOOK)
    [post] = testing.http.take_requests()
    assert (post.method, post.url, post.json()) == ("POST", HOOK, {"text": "hi"})
    assert post.header("Content-Type") == "application/json" and post.header("authorization") == "Bearer t"
    assert post.timeouts_ms == (2000, 2000, 2000)
    assert testing.http.requests() == []


def test_unscripted_is_404_or_denied():
    assert http.get("https://elsewhere.example.com/").status == 404
    testing.http.deny_unscripted()
    with pytest.raises(HttpError) as denied:
        http.get("https://elsewhere.example.com/x")
    assert denied.value.denied and not denied.value.retryable
    assert str(denied.value).startswith("GET https://elsewhere.example.com/x: denied by the host")


def test_scripts_once_first_then_the_last_added():
    testing.http.respond(HOOK, Response(200, "first"))
    testing.http.respond("https://hooks.example.com/*", Response(200, "glob"))
    testing.http.respond_once(HOOK, Response(503, "down"))
    testing.http.fail_once(HOOK, "timeout")
    assert http.post(HOOK).status == 503
    with pytest.raises(HttpError) as timed_out:
        http.post(HOOK)
    assert timed_out.value.kind == "timeout" and timed_out.value.retryable
    assert str(timed_out.value) == f"POST {HOOK}: timed out (scripted)"
    assert http.post(HOOK).text == "glob"
    with pytest.raises(ValueError):
        testing.http.fail(HOOK, "sleepy")


def test_grants_deny_other_origins_even_on_a_redirect():
    testing.http.grant("https://hooks.example.com:443/")
    testing.http.respond(HOOK, Response(302, headers={"location": "https://evil.example.com/"}))
    with pytest.raises(HttpError) as denied:
        http.get(HOOK)
    assert denied.value.kind == "denied" and denied.value.url == "https://evil.example.com/"
    assert [r.url for r in testing.http.take_requests()] == [HOOK, "https://evil.example.com/"]


def test_redirects_change_the_method_and_drop_secrets_across_origins():
    testing.http.respond_once(HOOK, Response(303, headers={"location": "/seen"}))
    testing.http.respond_once("https://hooks.example.com/seen", Response(307, headers={
        "location": "https://other.example.com/final"}))
    testing.http.respond("https://other.example.com/final", Response(200, json={"ok": True}))
    response = http.post_json(HOOK, {"a": 1}, headers={"Authorization": "t", "x-trace": "1"})
    assert response.json() == {"ok": True} and response.url == "https://other.example.com/final"
    first, second, third = testing.http.take_requests()
    assert (first.method, second.method, third.method) == ("POST", "GET", "GET")
    assert second.body == b"" and second.header("content-type") is None and second.header("authorization") == "t"
    assert third.header("authorization") is None and third.header("x-trace") == "1"


def test_redirect_limits():
    testing.http.respond("https://a.example.com/", Response(301, headers={"location": "https://a.example.com/"}))
    with pytest.raises(HttpError, match="more than 5 redirects"):
        http.get("https://a.example.com/")
    assert len(testing.http.take_requests()) == 6
    assert http.get("https://a.example.com/", max_redirects=0).status == 301
    testing.http.respond("https://b.example.com/", Response(302, headers={"location": "ftp://b.example.com/"}))
    with pytest.raises(HttpError) as bad:
        http.get("https://b.example.com/")
    assert bad.value.kind == "invalid-url"


def test_errors_and_decoding():
    for url in ("hooks.example.com/x", "ftp://a/", "https:///nohost"):
        with pytest.raises(HttpError) as invalid:
            http.get(url)
        assert invalid.value.kind == "invalid-url"
    assert testing.http.requests() == []
    testing.http.respond("https://api.example.com/", Response(500, "x" * 300))
    with pytest.raises(HttpError) as status:
        http.get_json("https://api.example.com/status")
    assert (status.value.kind, status.value.status, status.value.retryable) == ("status", 500, True)
    assert str(status.value).endswith("unexpected status 500: " + "x" * 200)
    assert testing.http.take_requests()[0].header("accept") == "application/json"
    testing.http.respond("https://api.example.com/", Response(200, "not json"))
    with pytest.raises(HttpError) as decode:
        http.get_json("https://api.example.com/status")
    assert decode.value.kind == "decode"
    testing.http.respond("https://api.example.com/big", Response(200, b"x" * 11))
    with pytest.raises(HttpError) as large:
        http.get("https://api.example.com/big", max_response_bytes=10)
    assert large.value.kind == "too-large"
    with pytest.raises(TypeError):
        http.request("POST", HOOK, body="a", json={})
    assert Response(201).raise_for_status().status == 201


def test_origins():
    assert http.origin("HTTPS://Hooks.Example.com:443/x?y") == "https://hooks.example.com"
    assert http.origin("http://a.example:8080/") == "http://a.example:8080"


def test_urllib_goes_through_the_stand_in():
    testing.reset()  # urllib.request is imported: the opener is installed
    testing.http.respond(HOOK, Response(200, "ok", {"content-type": "text/plain"}))
    with urllib.request.urlopen(urllib.request.Request(HOOK, data=b'{"a":1}', method="POST",
                                                       headers={"Content-Type": "application/json"})) as answer:
        assert (answer.status, answer.read(), answer.headers["content-type"]) == (200, b"ok", "text/plain")
    [post] = testing.http.take_requests()
    assert (post.method, post.body, post.header("content-type"), post.header("host")) == (
        "POST", b'{"a":1}', "application/json", None)
    testing.http.respond("https://hooks.example.com/gone", Response(410, "gone"))
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen("https://hooks.example.com/gone")
    assert refused.value.code == 410
    testing.http.deny_unscripted()
    with pytest.raises(urllib.error.URLError, match="denied by the host"):
        urllib.request.urlopen("https://elsewhere.example.com/")
