//! What a setting's value may be, and how it is read: each kind parses the variable's text
//! into the type the code uses, falls back to its default when the variable is unset or blank,
//! and refuses anything else with a [`ConfigError`] that names the variable and what it
//! accepts. The kind is the one place a setting's default and range are written.

use crate::config::ConfigError;

/// One `CORTEX_*` variable: its name, the flag that sets it too (if any), what it may hold
/// and what it does (the docs' settings table is made of these).
pub struct Setting<K> {
    pub name: &'static str,
    /// The command-line flag that sets it as well, e.g. `--db PATH|URL`.
    pub flag: Option<&'static str>,
    pub kind: K,
    pub doc: &'static str,
}

/// Why a value cannot be used: what is wrong with it, and what is accepted instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub problem: String,
    pub hint: String,
}

impl Refusal {
    pub fn new(problem: impl Into<String>, hint: impl Into<String>) -> Refusal {
        Refusal { problem: problem.into(), hint: hint.into() }
    }
}

/// A kind of value: how its text parses, and what applies when the variable is unset.
pub trait Kind {
    type Value;
    fn parse(&self, text: &str) -> Result<Self::Value, Refusal>;
    fn default_value(&self) -> Self::Value;
    /// The default as the docs and `cortex doctor` show it.
    fn default_text(&self) -> String;
    /// Whether the default is a value, not a description of what applies when unset.
    fn default_is_value(&self) -> bool {
        true
    }
    /// Values this kind refuses, for the tests that run every command with them.
    fn refuses(&self) -> Vec<String>;
}

impl<K: Kind> Setting<K> {
    /// The value in force: the variable's, parsed, or the default when it is unset or blank.
    pub fn get(&self, env: impl Fn(&str) -> Option<String>) -> Result<K::Value, ConfigError> {
        match env(self.name).filter(|v| !v.trim().is_empty()) {
            None => Ok(self.kind.default_value()),
            Some(text) => self.parse(&text),
        }
    }

    /// `text` as this setting's value, refused naming the variable.
    pub fn parse(&self, text: &str) -> Result<K::Value, ConfigError> {
        self.kind.parse(text.trim()).map_err(|r| ConfigError::new(self.name, text, r.problem, r.hint))
    }
}

/// A whole number in `min..=max`.
pub struct Whole {
    pub default: u64,
    pub min: u64,
    pub max: u64,
}

impl Kind for Whole {
    type Value = u64;

    fn parse(&self, text: &str) -> Result<u64, Refusal> {
        let hint = || {
            format!("expected a whole number from {} to {} (default {})", self.min, self.max, self.default)
        };
        match text.parse::<u64>() {
            Ok(n) if (self.min..=self.max).contains(&n) => Ok(n),
            Ok(_) => Err(Refusal::new("is out of range", hint())),
            Err(_) => Err(Refusal::new("is not a whole number", hint())),
        }
    }

    fn default_value(&self) -> u64 {
        self.default
    }

    fn default_text(&self) -> String {
        self.default.to_string()
    }

    fn refuses(&self) -> Vec<String> {
        let mut bad = vec!["often".to_string(), "-1".to_string(), "1.5".to_string()];
        if self.min > 0 {
            bad.push((self.min - 1).to_string());
        }
        if let Some(above) = self.max.checked_add(1) {
            bad.push(above.to_string());
        }
        bad
    }
}

/// A number (fractions allowed) in `min..=max`.
pub struct Fraction {
    pub default: f64,
    pub min: f64,
    pub max: f64,
}

impl Kind for Fraction {
    type Value = f64;

    fn parse(&self, text: &str) -> Result<f64, Refusal> {
        let hint =
            || format!("expected a number from {} to {} (default {})", self.min, self.max, self.default);
        match text.parse::<f64>() {
            Ok(n) if (self.min..=self.max).contains(&n) => Ok(n),
            Ok(_) => Err(Refusal::new("is out of range", hint())),
            Err(_) => Err(Refusal::new("is not a number", hint())),
        }
    }

    fn default_value(&self) -> f64 {
        self.default
    }

    fn default_text(&self) -> String {
        self.default.to_string()
    }

    fn refuses(&self) -> Vec<String> {
        vec!["high".to_string(), "NaN".to_string(), (self.max + 1.0).to_string()]
    }
}

/// One word of a fixed list, compared without regard to case, read as the typed value it
/// names: the code matches on the value, never on the word.
pub struct Choice<T: 'static> {
    pub default: T,
    /// Each word and the value it stands for, in the order the hint lists them.
    pub choices: &'static [(&'static str, T)],
}

impl<T: Copy + PartialEq> Choice<T> {
    fn word_of(&self, value: T) -> &'static str {
        self.choices.iter().find(|(_, v)| *v == value).map_or("?", |(word, _)| word)
    }
}

impl<T: Copy + PartialEq> Kind for Choice<T> {
    type Value = T;

    fn parse(&self, text: &str) -> Result<T, Refusal> {
        self.choices.iter().find(|(word, _)| word.eq_ignore_ascii_case(text)).map(|(_, v)| *v).ok_or_else(
            || {
                let words: Vec<&str> = self.choices.iter().map(|(word, _)| *word).collect();
                Refusal::new(
                    "is not one of the choices",
                    format!("expected {} (default {})", words.join(", "), self.word_of(self.default)),
                )
            },
        )
    }

    fn default_value(&self) -> T {
        self.default
    }

    fn default_text(&self) -> String {
        self.word_of(self.default).to_string()
    }

    fn refuses(&self) -> Vec<String> {
        vec!["garbage".to_string(), "-".to_string()]
    }
}

/// A value with a rule of its own (a rate, a URL, a precision) and a default in the same
/// form.
pub struct Parsed<T: 'static> {
    pub default: &'static str,
    pub parse: fn(&str) -> Result<T, Refusal>,
    /// Values the rule refuses, for the tests; empty for free text.
    pub refuses: &'static [&'static str],
}

impl<T> Kind for Parsed<T> {
    type Value = T;

    fn parse(&self, text: &str) -> Result<T, Refusal> {
        (self.parse)(text)
    }

    fn default_value(&self) -> T {
        // The tests parse every default; a default the rule refuses is a bug of the table.
        (self.parse)(self.default).unwrap_or_else(|r| panic!("the default {:?} {}", self.default, r.problem))
    }

    fn default_text(&self) -> String {
        self.default.to_string()
    }

    fn refuses(&self) -> Vec<String> {
        self.refuses.iter().map(|s| s.to_string()).collect()
    }
}

/// A value that is absent unless set: what applies then is described, not a value (a path
/// found at run time, a scope inferred from git, a feature left off).
pub struct Optional<T: 'static> {
    pub when_unset: &'static str,
    pub parse: fn(&str) -> Result<T, Refusal>,
    pub refuses: &'static [&'static str],
}

impl<T> Kind for Optional<T> {
    type Value = Option<T>;

    fn parse(&self, text: &str) -> Result<Option<T>, Refusal> {
        (self.parse)(text).map(Some)
    }

    fn default_value(&self) -> Option<T> {
        None
    }

    fn default_text(&self) -> String {
        self.when_unset.to_string()
    }

    fn default_is_value(&self) -> bool {
        false
    }

    fn refuses(&self) -> Vec<String> {
        self.refuses.iter().map(|s| s.to_string()).collect()
    }
}

/// Free text without control characters (a name, a path, a claim).
pub fn text(value: &str) -> Result<String, Refusal> {
    if value.chars().any(char::is_control) {
        return Err(Refusal::new("contains a control character", "expected plain text on one line"));
    }
    Ok(value.to_string())
}

/// An `http://` or `https://` URL with a host.
pub fn http_url(value: &str) -> Result<String, Refusal> {
    let ok = value.split_once("://").is_some_and(|(scheme, rest)| {
        matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https") && !rest.is_empty()
    });
    if !ok || value.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(Refusal::new("is not an http(s) URL", "expected http://host… or https://host…"));
    }
    Ok(value.to_string())
}

/// A path: free text, as given (relative paths are the reader's to resolve).
pub fn path(value: &str) -> Result<std::path::PathBuf, Refusal> {
    text(value).map(std::path::PathBuf::from)
}

/// A scope value, checked as a request's would be (length, control characters).
pub fn scope_value(field: &str, value: &str) -> Result<String, Refusal> {
    cortex_domain::scope::check_value(field, value)
        .map_err(|e| Refusal::new(e.message.replace(&format!("scope `{field}` "), ""), e.human_hint))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NUMBER: Setting<Whole> =
        Setting { name: "CORTEX_X", flag: None, kind: Whole { default: 8, min: 1, max: 10 }, doc: "" };

    #[test]
    fn a_number_out_of_range_is_refused_naming_the_variable_and_what_it_accepts() {
        let env = |v: &'static str| move |_: &str| Some(v.to_string());
        assert_eq!(NUMBER.get(|_| None).unwrap(), 8);
        assert_eq!(NUMBER.get(env("  ")).unwrap(), 8, "blank counts as unset");
        assert_eq!(NUMBER.get(env(" 10 ")).unwrap(), 10);
        for bad in NUMBER.kind.refuses() {
            let e = NUMBER.parse(&bad).unwrap_err();
            assert_eq!(e.name, "CORTEX_X");
            assert!(e.to_string().contains("expected a whole number from 1 to 10 (default 8)"), "{e}");
        }
    }

    #[test]
    fn a_choice_is_read_without_regard_to_case_as_the_value_it_names() {
        let kind = Choice { default: 1, choices: &[("alpha", 1), ("beta", 2)] };
        assert_eq!(kind.parse("BETA"), Ok(2));
        assert_eq!(kind.default_text(), "alpha");
        assert!(kind.parse("gamma").unwrap_err().hint.contains("expected alpha, beta (default alpha)"));
    }

    #[test]
    fn urls_and_text() {
        assert!(http_url("https://api.openai.com/v1").is_ok());
        for bad in ["localhost:11434", "ftp://x", "http://", "http://a b"] {
            assert!(http_url(bad).is_err(), "{bad}");
        }
        assert!(text("a\u{1b}[31mb").is_err());
    }
}
