//! The JSON-RPC framing under arbitrary bytes: every line is either
//! a message for rmcp, nothing to answer, or exactly one well-formed JSON-RPC error line with a
//! standard code, a message and a hint; the framer splits any stream back into its lines, and
//! reports every over-long one with its length. Bounded for CI; `CORTEX_FUZZ_CASES` runs longer.

use cortex_mcp::frame::{
    Frame, INVALID_PARAMS, INVALID_REQUEST, Inbound, LineFramer, PARSE_ERROR, Rejection, classify, leading_id,
};
use cortex_testdb::fuzz::{cases, check};
use serde_json::Value;

fn assert_one_error_line(rejection: &Rejection, input: &[u8]) {
    assert!([PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS].contains(&rejection.code), "{rejection:?}");
    assert!(!rejection.message.is_empty() && !rejection.human_hint.is_empty(), "{rejection:?}");
    let line = rejection.to_line();
    assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1, "one line");
    let answer: Value = serde_json::from_slice(&line).unwrap_or_else(|e| panic!("{e} for {input:?}"));
    assert_eq!(answer["jsonrpc"], "2.0");
    assert!(matches!(answer["id"], Value::Null | Value::String(_) | Value::Number(_)), "{answer}");
    assert_eq!(answer["error"]["code"], rejection.code);
}

#[test]
fn every_line_is_a_message_nothing_or_one_clear_error() {
    check("classify", cases(), |rng| {
        let line = rng.bytes();
        if let Inbound::Reject(rejection) = classify(&line) {
            assert_one_error_line(&rejection, &line);
        }
        // Whatever prefix survives of an over-long line, reading its id never fails loudly.
        let cut = rng.below(line.len() + 1);
        if let Some(id) = leading_id(&line[..cut]) {
            assert!(matches!(id, Value::String(_) | Value::Number(_)), "{id}");
        }
        let too_large = Rejection::too_large(&line[..cut], 1 << 30, 1 << 26);
        assert_one_error_line(&too_large, &line);
    });
}

#[test]
fn any_stream_splits_back_into_its_lines() {
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    check("framer", cases() / 4, |rng| {
        let limit = 1 + rng.below(40);
        let lines: Vec<Vec<u8>> =
            (0..rng.below(8)).map(|_| rng.bytes().into_iter().filter(|b| *b != b'\n').collect()).collect();
        let mut stream = lines.join(&b'\n');
        let trailing_newline = rng.chance(2);
        if trailing_newline && !lines.is_empty() {
            stream.push(b'\n');
        }
        // A small buffer, so lines arrive in pieces as they do from a pipe.
        let reader = tokio::io::BufReader::with_capacity(1 + rng.below(16), &stream[..]);
        let mut framer = LineFramer::with_limit(reader, limit);
        let mut frames = Vec::new();
        runtime.block_on(async {
            while let Some(frame) = framer.next().await.unwrap() {
                frames.push(frame);
            }
        });
        // A stream without lines, or ending in an empty unterminated line, yields no frame for it.
        let expected: Vec<&Vec<u8>> = lines
            .iter()
            .enumerate()
            .filter(|(i, l)| !(l.is_empty() && *i == lines.len() - 1 && !trailing_newline))
            .map(|(_, l)| l)
            .collect();
        assert_eq!(frames.len(), expected.len(), "{lines:?} → {frames:?}");
        for (frame, line) in frames.iter().zip(expected) {
            match frame {
                Frame::Line(got) => assert!(got == line && line.len() <= limit),
                Frame::TooLarge { head, bytes } => {
                    assert_eq!(*bytes, line.len());
                    assert!(line.len() > limit && line.starts_with(head));
                }
            }
        }
    });
}
