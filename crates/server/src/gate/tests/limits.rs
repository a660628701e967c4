//! The limits as a client meets them: its key's rate, its calls at once, the body's size and
//! time, and the server's bytes in flight — each refusal with its code, its `Retry-After` where
//! waiting helps, and the connection closed where the rest of a body may still be coming.

use crate::test_support::{LOOPBACK, TestServer, find, mcp};
use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use cortex_service::keys::KeySpec;
use cortex_testdb::TestDb;
use serde_json::json;
use std::time::Duration;

fn keyed(server: &TestServer, rate: Option<&str>) -> String {
    let rate = rate.map(str::to_string);
    server.key_of(KeySpec {
        name: "ci".into(),
        org: "acme".into(),
        role: "read".into(),
        rate,
        ..KeySpec::default()
    })
}

/// A find whose body is a stream the test feeds: the sender, and the request.
fn streamed(
    token: &str,
) -> (tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>, axum::http::Request<Body>) {
    let (send, receive) = tokio::sync::mpsc::channel(4);
    let stream = tokio_stream_of(receive);
    let mut request = find(Some(token));
    *request.body_mut() = Body::from_stream(stream);
    request.headers_mut().remove(header::CONTENT_LENGTH);
    (send, request)
}

fn tokio_stream_of(
    mut receive: tokio::sync::mpsc::Receiver<Result<Bytes, std::io::Error>>,
) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> {
    futures::stream::poll_fn(move |cx| receive.poll_recv(cx))
}

/// The body of [`find`] with `token`, in bytes.
fn find_body(token: &str) -> Bytes {
    let request = find(Some(token));
    futures::executor::block_on(axum::body::to_bytes(request.into_body(), 1 << 20)).unwrap()
}

#[test]
fn a_key_over_its_rate_is_told_when_to_come_back() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let token = keyed(&server, Some("1/min"));
    assert_eq!(server.send(find(Some(&token))).status, StatusCode::OK);
    let answer = server.send(find(Some(&token)));
    assert_eq!(
        (answer.status, answer.code().as_deref()),
        (StatusCode::TOO_MANY_REQUESTS, Some("rate_limited"))
    );
    let wait: u64 = answer.header(header::RETRY_AFTER).unwrap().parse().unwrap();
    assert!((1..=60).contains(&wait), "a minute's rate says to wait up to a minute: {wait}");
    assert!(answer.text.contains("the key `ci` is over its rate"), "{}", answer.text);
}

#[test]
fn the_servers_default_rate_holds_for_a_key_without_its_own() {
    let db = TestDb::sqlite();
    let server = TestServer::with(&db, "127.0.0.1:0", &[("CORTEX_HTTP_RATE", "1/min")]);
    let token = keyed(&server, None);
    assert_eq!(server.send(find(Some(&token))).status, StatusCode::OK);
    assert_eq!(server.send(find(Some(&token))).status, StatusCode::TOO_MANY_REQUESTS);
}

#[test]
fn the_local_user_of_a_keyless_loopback_server_has_no_rate() {
    let db = TestDb::sqlite();
    let server = TestServer::with(&db, "127.0.0.1:0", &[("CORTEX_HTTP_RATE", "1/min")]);
    for n in 0..3 {
        assert_eq!(server.send(find(None)).status, StatusCode::OK, "call {n}");
    }
}

#[test]
fn a_declared_body_over_the_limit_is_refused_before_it_is_read() {
    let db = TestDb::sqlite();
    let server = TestServer::with(&db, "127.0.0.1:0", &[("CORTEX_HTTP_MAX_BODY_BYTES", "1024")]);
    let token = keyed(&server, None);
    let query = "word ".repeat(400);
    let mut request = crate::test_support::tool_call(Some(&token), "memory_find", json!({"query": query}));
    let length = find_body(&token).len() + query.len();
    request.headers_mut().insert(header::CONTENT_LENGTH, length.into());
    let answer = server.send(request);
    assert_eq!((answer.status, answer.code().as_deref()), (StatusCode::PAYLOAD_TOO_LARGE, Some("too_large")));
    assert!(answer.text.contains("over this server's limit of 1024 bytes"), "{}", answer.text);
    assert!(
        answer.text.contains("CORTEX_HTTP_MAX_BODY_BYTES"),
        "the hint names the setting: {}",
        answer.text
    );
}

#[test]
fn an_undeclared_body_growing_past_the_limit_is_refused_and_the_connection_closed() {
    let db = TestDb::sqlite();
    let server = TestServer::with(&db, "127.0.0.1:0", &[("CORTEX_HTTP_MAX_BODY_BYTES", "1024")]);
    let token = keyed(&server, None);
    let (send, request) = streamed(&token);
    let answer = server.block_on(async {
        let answer = server.send_from(LOOPBACK, request);
        let feed = async {
            for _ in 0..3 {
                let _ = send.send(Ok(Bytes::from(vec![b' '; 600]))).await;
            }
        };
        tokio::join!(answer, feed).0
    });
    assert_eq!((answer.status, answer.code().as_deref()), (StatusCode::PAYLOAD_TOO_LARGE, Some("too_large")));
    assert_eq!(answer.header(header::CONNECTION), Some("close"));
}

#[test]
fn a_body_that_stops_arriving_times_out_and_frees_the_keys_place() {
    let db = TestDb::sqlite();
    let settings = [("CORTEX_HTTP_BODY_TIMEOUT_MS", "200"), ("CORTEX_HTTP_MAX_CONCURRENT", "1")];
    let server = TestServer::with(&db, "127.0.0.1:0", &settings);
    let token = keyed(&server, None);
    let (send, request) = streamed(&token);
    let answer = server.block_on(async {
        let _ = send.send(Ok(Bytes::from_static(b"{\"jsonrpc\""))).await;
        server.send_from(LOOPBACK, request).await
    });
    drop(send);
    assert_eq!(
        (answer.status, answer.code().as_deref()),
        (StatusCode::REQUEST_TIMEOUT, Some("body_timeout"))
    );
    assert!(answer.text.contains("within 200 ms"), "{}", answer.text);
    assert_eq!(answer.header(header::CONNECTION), Some("close"));
    // The key's one place was given back with the refusal.
    assert_eq!(server.send(find(Some(&token))).status, StatusCode::OK);
}

#[test]
fn a_key_at_its_calls_at_once_is_refused_until_one_ends() {
    let db = TestDb::sqlite();
    let server = TestServer::with(&db, "127.0.0.1:0", &[("CORTEX_HTTP_MAX_CONCURRENT", "1")]);
    let token = keyed(&server, None);
    let body = find_body(&token);
    let (send, request) = streamed(&token);
    let (first, second) = server.block_on(async {
        let first = server.send_from(LOOPBACK, request);
        let second = async {
            let _ = send.send(Ok(body.slice(..10))).await;
            tokio::time::sleep(Duration::from_millis(100)).await;
            let second = server.send_from(LOOPBACK, find(Some(&token))).await;
            let _ = send.send(Ok(body.slice(10..))).await;
            drop(send);
            second
        };
        tokio::join!(first, second)
    });
    assert_eq!(
        (second.status, second.code().as_deref()),
        (StatusCode::TOO_MANY_REQUESTS, Some("too_many_calls")),
        "{}",
        second.text
    );
    assert_eq!(second.header(header::RETRY_AFTER), Some("1"));
    assert_eq!(
        first.status,
        StatusCode::OK,
        "the held call is answered once its body is whole: {}",
        first.text
    );
    assert_eq!(server.send(find(Some(&token))).status, StatusCode::OK, "the place is free again");
}

#[test]
fn bodies_past_the_servers_bytes_in_flight_are_busy_not_too_large() {
    let db = TestDb::sqlite();
    let settings = [("CORTEX_HTTP_MAX_BODY_BYTES", "2048"), ("CORTEX_HTTP_MAX_BYTES_IN_FLIGHT", "2048")];
    let server = TestServer::with(&db, "127.0.0.1:0", &settings);
    let (one, two) = (keyed(&server, None), server.key("other", "read"));
    let (send, mut held) = streamed(&one);
    held.headers_mut().insert(header::CONTENT_LENGTH, 2000.into());
    let busy = server.block_on(async {
        let first = server.send_from(LOOPBACK, held);
        let second = async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let answer = server.send_from(LOOPBACK, find(Some(&two))).await;
            drop(send);
            answer
        };
        tokio::join!(first, second).1
    });
    assert_eq!(
        (busy.status, busy.code().as_deref()),
        (StatusCode::SERVICE_UNAVAILABLE, Some("busy")),
        "{}",
        busy.text
    );
    assert_eq!(busy.header(header::RETRY_AFTER), Some("1"));
    assert!(busy.text.contains("CORTEX_HTTP_MAX_BYTES_IN_FLIGHT"), "{}", busy.text);
}

#[test]
fn a_get_on_mcp_counts_against_the_rate_too() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let token = keyed(&server, Some("1/min"));
    assert_eq!(server.send(find(Some(&token))).status, StatusCode::OK);
    let mut request = mcp(Some(&token), "");
    *request.method_mut() = axum::http::Method::GET;
    let answer = server.send(request);
    assert_eq!(
        (answer.status, answer.code().as_deref()),
        (StatusCode::TOO_MANY_REQUESTS, Some("rate_limited"))
    );
}
