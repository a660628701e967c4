//! For the tests of this module: an issuer on a real loopback socket, speaking just enough
//! HTTP/1.1 to serve discovery, a JWKS and an introspection endpoint. Each endpoint can be made
//! to hang — accept the connection, read the request, and never answer — and every request is
//! counted, so a test can say how often the issuer was asked while it hung.

use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// A P-256 key as an issuer publishes it (kid `k1`).
const EC_X: &str = "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU";
const EC_Y: &str = "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0";

#[derive(Default)]
struct State {
    /// Requests seen, by path.
    seen: HashMap<String, usize>,
    /// Paths whose requests are held unanswered.
    hanging: Vec<String>,
    /// Connections held unanswered (kept open until released).
    held: Vec<TcpStream>,
    /// What the introspection endpoint answers per token (default: not active).
    answers: HashMap<String, Value>,
    /// The key set published instead of the fixed one (a test that signs its own tokens).
    jwks: Option<Value>,
}

pub struct TestIssuer {
    pub url: String,
    state: Arc<Mutex<State>>,
}

impl TestIssuer {
    pub fn start() -> TestIssuer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State::default()));
        let (shared, base) = (state.clone(), url.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (state, base) = (shared.clone(), base.clone());
                std::thread::spawn(move || serve(stream, &state, &base));
            }
        });
        TestIssuer { url, state }
    }

    /// From now on, requests to `path` are accepted and never answered.
    pub fn hang(&self, path: &str) {
        self.lock().hanging.push(path.to_string());
    }

    /// Answers what is held and stops hanging: each held connection is closed.
    pub fn release(&self) {
        let mut state = self.lock();
        state.hanging.clear();
        state.held.clear();
    }

    pub fn seen(&self, path: &str) -> usize {
        self.lock().seen.get(path).copied().unwrap_or(0)
    }

    /// Connections held unanswered right now.
    pub fn held(&self) -> usize {
        self.lock().held.len()
    }

    /// From now on, the JWKS endpoint publishes `jwks`.
    pub fn publish(&self, jwks: Value) {
        self.lock().jwks = Some(jwks);
    }

    pub fn answer(&self, token: &str, answer: Value) {
        self.lock().answers.insert(token.to_string(), answer);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn serve(stream: TcpStream, state: &Mutex<State>, base: &str) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut first = String::new();
    if reader.read_line(&mut first).is_err() {
        return;
    }
    let path = first.split_whitespace().nth(1).unwrap_or("").to_string();
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let answer = {
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        *s.seen.entry(path.clone()).or_default() += 1;
        if s.hanging.contains(&path) {
            s.held.push(stream);
            return;
        }
        match path.as_str() {
            "/.well-known/openid-configuration" => json!({"issuer": base, "jwks_uri": format!("{base}/jwks"),
                "introspection_endpoint": format!("{base}/introspect")}),
            "/jwks" => s.jwks.clone().unwrap_or_else(
                || json!({"keys": [{"kty": "EC", "kid": "k1", "crv": "P-256", "x": EC_X, "y": EC_Y}]}),
            ),
            "/introspect" => {
                let token =
                    form_urlencoded::parse(&body).find(|(k, _)| k == "token").map(|(_, v)| v.into_owned());
                token.and_then(|t| s.answers.get(&t).cloned()).unwrap_or(json!({"active": false}))
            }
            _ => Value::Null,
        }
    };
    let text = answer.to_string();
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
        text.len()
    );
}
