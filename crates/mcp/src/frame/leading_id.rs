//! The top-level `id` of a line cut off at the message limit, read from the part kept, so the
//! `too_large` answer goes to the request that sent it.

use serde_json::Value;

/// The top-level `id` of a JSON object whose text is cut off, when it appears in the part
/// that was kept (clients write it before the large `params`).
pub fn leading_id(head: &[u8]) -> Option<Value> {
    let mut s = Scanner { bytes: head, at: 0 };
    s.whitespace();
    s.eat(b'{')?;
    loop {
        s.whitespace();
        let key_start = s.at;
        s.string()?;
        let is_id = &head[key_start..s.at] == b"\"id\"";
        s.whitespace();
        s.eat(b':')?;
        s.whitespace();
        let start = s.at;
        s.value()?;
        if is_id {
            return match serde_json::from_slice::<Value>(&head[start..s.at]).ok()? {
                id @ (Value::String(_) | Value::Number(_)) => Some(id),
                _ => None,
            };
        }
        s.whitespace();
        s.eat(b',')?;
    }
}

/// A forward-only scanner over a prefix of JSON text; every step fails (`None`) where the
/// prefix ends.
struct Scanner<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn whitespace(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// A string, quotes included.
    fn string(&mut self) -> Option<()> {
        self.eat(b'"')?;
        loop {
            match self.peek()? {
                b'"' => {
                    self.at += 1;
                    return Some(());
                }
                b'\\' => self.at += 2,
                _ => self.at += 1,
            }
        }
    }

    /// Any value; nested containers are skipped by counting brackets outside strings, so deep
    /// nesting costs no stack.
    fn value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string(),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => depth -= 1,
                        _ => {}
                    }
                    self.at += 1;
                    if depth == 0 {
                        return Some(());
                    }
                }
            }
            _ => {
                let start = self.at;
                while self
                    .peek()
                    .is_some_and(|b| !matches!(b, b',' | b'}' | b']') && !b.is_ascii_whitespace())
                {
                    self.at += 1;
                }
                // A scalar cut off by the end of the prefix is not known whole.
                (self.at > start && self.at < self.bytes.len()).then_some(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_id_is_read_from_the_head_of_a_cut_off_message() {
        assert_eq!(
            leading_id(br#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"x":"aaaa"#),
            Some(json!(12))
        );
        assert_eq!(
            leading_id(br#" { "method" : "a", "params": {"id": 3, "s": "}\""}, "id" : "k-1", "x"#),
            Some(json!("k-1"))
        );
        assert_eq!(leading_id(br#"{"jsonrpc":"2.0","params":{"x":"aaaa"#), None);
        assert_eq!(leading_id(br#"{"id":12"#), None, "a number cut off may be longer");
        assert_eq!(leading_id(b"[1,2]"), None);
    }
}
