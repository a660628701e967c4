//! A field's text nested under its `##` section: every line that starts with `#` outside a
//! code fence gets two more (`## Context` → `#### Context`), so no line of the text can
//! end the section, and its own headings still read as headings beneath it. Reading back
//! takes the two off again: the mapping is one to one.

/// The fence a line opens or closes (```` ``` ```` or `~~~`), if any.
fn fence(line: &str) -> Option<&'static str> {
    let body = line.trim_start_matches(' ');
    if line.len() - body.len() > 3 {
        None
    } else if body.starts_with("```") {
        Some("```")
    } else if body.starts_with("~~~") {
        Some("~~~")
    } else {
        None
    }
}

/// Tracks whether the lines so far leave a code fence open.
#[derive(Debug, Default)]
pub(crate) struct Fences {
    open: Option<&'static str>,
}

impl Fences {
    /// Takes one line; whether it lies inside a fence (its opening and closing lines too).
    pub fn inside(&mut self, line: &str) -> bool {
        match (self.open, fence(line)) {
            (None, Some(marker)) => {
                self.open = Some(marker);
                true
            }
            (Some(open), Some(marker)) if open == marker => {
                self.open = None;
                true
            }
            (open, _) => open.is_some(),
        }
    }

    pub fn closed(&self) -> bool {
        self.open.is_none()
    }
}

/// Whether a text reads back whole from a section: trimmed, `\n` line ends, every fence
/// closed (an open one would swallow the sections after it).
pub(crate) fn nestable(text: &str) -> bool {
    let mut fences = Fences::default();
    for line in text.lines() {
        fences.inside(line);
    }
    !text.is_empty() && text == text.trim() && !text.contains('\r') && fences.closed()
}

pub(crate) fn nest(text: &str) -> String {
    let mut fences = Fences::default();
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            let fenced = fences.inside(line);
            if !fenced && line.starts_with('#') { format!("##{line}") } else { line.to_string() }
        })
        .collect();
    lines.join("\n")
}

/// The text of a section's lines, as it was before [`nest`].
pub(crate) fn unnest(lines: &[&str]) -> String {
    let mut fences = Fences::default();
    let lines: Vec<&str> = lines
        .iter()
        .map(|line| {
            let fenced = fences.inside(line);
            match line.strip_prefix("##") {
                Some(rest) if !fenced && rest.starts_with('#') => rest,
                _ => line,
            }
        })
        .collect();
    lines.join("\n").trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_nest_two_levels_down_and_come_back() {
        let text = "## Context\n\nWe need it.\n\n```sh\n# a comment\n```\n\n#tag and ###### six";
        let nested = nest(text);
        assert_eq!(nested, "#### Context\n\nWe need it.\n\n```sh\n# a comment\n```\n\n###tag and ###### six");
        let lines: Vec<&str> = nested.lines().collect();
        assert_eq!(unnest(&lines), text);
        assert!(nestable(text));
        assert!(!nestable("```\nopen"));
        assert!(!nestable(" padded"));
    }
}
