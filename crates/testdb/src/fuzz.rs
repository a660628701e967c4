//! A small deterministic generator for property tests on stable Rust: a seeded xorshift, and
//! arbitrary or mutated JSON, text and bytes shaped like what a confused or hostile client
//! sends. Bounded by default (CI runs a few thousand cases in seconds); run longer with
//! `CORTEX_FUZZ_CASES=200000` and another `CORTEX_FUZZ_SEED=…`. A failing case names the seed
//! and its number, so it reruns alone.

use serde_json::{Map, Value, json};

/// Cases per property unless `CORTEX_FUZZ_CASES` says otherwise.
pub const DEFAULT_CASES: usize = 2_000;
const DEFAULT_SEED: u64 = 0x00c0_47e5_f022_0015;

/// xorshift64*: small, fast, and the same on every machine.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        // Zero is xorshift's one fixed point.
        Rng(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }

    pub fn pick<T: Clone>(&mut self, from: &[T]) -> T {
        from[self.below(from.len())].clone()
    }

    /// A short string mixing what parsers trip on: quotes, backslashes, query syntax, control
    /// characters, NUL, combining marks, emoji, right-to-left text, long runs.
    pub fn text(&mut self) -> String {
        const PIECES: &[&str] = &[
            "deploy",
            "redis",
            "the",
            "a",
            "\"",
            "\\",
            "-",
            "*",
            "(",
            ")",
            ":",
            "^",
            "AND",
            "OR",
            "NOT",
            "NEAR",
            " ",
            "  ",
            "\t",
            "\n",
            "\r",
            "\0",
            "\u{1b}[31m",
            "é",
            "e\u{301}",
            "日本",
            "🦀",
            "\u{202e}",
            "\u{feff}",
            "%",
            "_",
            "'",
            ";",
            "--",
            "{",
            "}",
            "[",
            "]",
            ",",
            "0",
            "-1",
            "1e309",
            "null",
            "true",
            "ids",
            "items",
            "tag",
            "x",
        ];
        let mut out = String::new();
        for _ in 0..self.below(12) {
            out.push_str(self.pick(PIECES));
        }
        if self.chance(40) {
            out.push_str(&"w".repeat(self.below(3_000)));
        }
        out
    }

    /// Raw bytes, often near-JSON.
    pub fn bytes(&mut self) -> Vec<u8> {
        let mut out = if self.chance(2) {
            let value = self.json(3);
            value.to_string().into_bytes()
        } else {
            (0..self.below(64)).map(|_| self.next_u64() as u8).collect()
        };
        for _ in 0..self.below(4) {
            if out.is_empty() {
                break;
            }
            let at = self.below(out.len());
            match self.below(4) {
                0 => out[at] = self.next_u64() as u8,
                1 => out.truncate(at),
                2 => out.insert(at, self.pick(&[b'{', b'[', b'"', b'\\', b'\n', 0xff, 0xed])),
                _ => {
                    let tail = out[at..].to_vec();
                    out.extend_from_slice(&tail);
                }
            }
        }
        out
    }

    /// An arbitrary JSON value at most `depth` containers deep.
    pub fn json(&mut self, depth: usize) -> Value {
        match self.below(if depth == 0 { 6 } else { 8 }) {
            0 => Value::Null,
            1 => Value::Bool(self.chance(2)),
            2 => json!(self.pick(&[0i64, 1, -1, 100, 101, i64::MAX, i64::MIN, 32, 33, 257])),
            3 => json!(self.pick(&[0.5f64, -0.0, 1e300, 2.5])),
            4 | 5 => Value::String(self.text()),
            6 => Value::Array((0..self.below(5)).map(|_| self.json(depth - 1)).collect()),
            _ => {
                let mut map = Map::new();
                for _ in 0..self.below(5) {
                    map.insert(self.text(), self.json(depth - 1));
                }
                Value::Object(map)
            }
        }
    }

    /// `value` changed in a few places: a node replaced by an arbitrary value, a key removed,
    /// an unknown key added, a list grown past its limit, a string made huge.
    pub fn mutate(&mut self, mut value: Value) -> Value {
        for _ in 0..1 + self.below(3) {
            self.mutate_once(&mut value, 0);
        }
        value
    }

    fn mutate_once(&mut self, value: &mut Value, depth: usize) {
        let descend = depth < 6 && !self.chance(3);
        match value {
            Value::Object(map) if descend && !map.is_empty() => {
                let key = map.keys().nth(self.below(map.len())).cloned().unwrap_or_default();
                match self.below(6) {
                    0 => {
                        map.remove(&key);
                    }
                    1 => {
                        map.insert(self.text(), self.json(2));
                    }
                    _ => {
                        if let Some(child) = map.get_mut(&key) {
                            self.mutate_once(child, depth + 1);
                        }
                    }
                }
            }
            Value::Array(list) if descend && !list.is_empty() => match self.below(5) {
                0 => {
                    let grown = 1 + self.below(1_100);
                    let item = list[0].clone();
                    list.extend(std::iter::repeat_n(item, grown));
                }
                1 => list.clear(),
                _ => {
                    let at = self.below(list.len());
                    self.mutate_once(&mut list[at], depth + 1);
                }
            },
            Value::String(s) if self.chance(4) => {
                s.push_str(&"z".repeat(self.pick(&[0, 65, 257, 1_001, 300_000])))
            }
            other => *other = self.json(2),
        }
    }
}

/// Cases per property: `CORTEX_FUZZ_CASES`, else [`DEFAULT_CASES`].
pub fn cases() -> usize {
    std::env::var("CORTEX_FUZZ_CASES").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(DEFAULT_CASES)
}

/// The run's seed: `CORTEX_FUZZ_SEED`, else a fixed one (CI reruns the same cases).
pub fn seed() -> u64 {
    std::env::var("CORTEX_FUZZ_SEED").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(DEFAULT_SEED)
}

/// Runs `property` on `cases` cases, each with its own generator derived from the seed; a
/// panic is re-raised naming how to rerun that case alone.
pub fn check(name: &str, cases: usize, mut property: impl FnMut(&mut Rng)) {
    let seed = seed();
    for case in 0..cases {
        let case_seed = seed ^ (case as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut rng = Rng::new(case_seed);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| property(&mut rng)));
        if let Err(panic) = outcome {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("{name}: case {case} of seed {seed} failed: {message}");
        }
    }
}
