//! The section titles of a reStructuredText file (`CHANGES.rst`): a line underlined — and
//! maybe overlined — by a run of one punctuation character. Levels come from the order in
//! which the styles first appear, as Docutils assigns them. Only what a changelog needs:
//! the rest of the text is kept as written.

use super::markdown::Heading;

/// The characters rST allows for section adornments.
const ADORNMENTS: &str = "=-~^\"'`*+#:.<>_!$%&,/;?@[\\]{|}";

fn adornment(line: &str) -> Option<char> {
    let line = line.trim_end();
    let first = line.chars().next()?;
    (line.chars().count() >= 3 && ADORNMENTS.contains(first) && line.chars().all(|c| c == first))
        .then_some(first)
}

/// The section titles of `text`, in order, with their byte ranges.
pub fn headings(text: &str) -> Vec<Heading> {
    let lines: Vec<(usize, &str)> = text
        .split_inclusive('\n')
        .scan(0, |offset, line| {
            let start = *offset;
            *offset += line.len();
            Some((start, line))
        })
        .collect();
    let mut styles: Vec<(char, bool)> = Vec::new();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < lines.len() {
        let (start, line) = lines[i];
        let title = line.trim_end();
        let under = adornment(lines[i + 1].1);
        let is_title = !title.is_empty()
            && !line.starts_with([' ', '\t'])
            && adornment(title).is_none()
            && under.is_some_and(|_| lines[i + 1].1.trim_end().chars().count() + 2 >= title.chars().count());
        if let (true, Some(mark)) = (is_title, under) {
            let over = i > 0 && adornment(lines[i - 1].1) == Some(mark);
            let style = (mark, over);
            let level = match styles.iter().position(|s| *s == style) {
                Some(p) => p + 1,
                None => {
                    styles.push(style);
                    styles.len()
                }
            };
            let start = if over { lines[i - 1].0 } else { start };
            let body_start = lines[i + 1].0 + lines[i + 1].1.len();
            out.push(Heading { level, text: title.trim().to_string(), start, body_start });
            i += 2;
            continue;
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_by_their_adornments() {
        let text = "=======\nChanges\n=======\n\nVersion 3.2.0\n-------------\n\nUnreleased\n\n-   Drop support. :pr:`1`\n\nVersion 3.1.3\n-------------\n\nReleased 2026-02-18\n";
        let h = headings(text);
        let shown: Vec<(usize, &str)> = h.iter().map(|h| (h.level, h.text.as_str())).collect();
        assert_eq!(shown, [(1, "Changes"), (2, "Version 3.2.0"), (2, "Version 3.1.3")]);
        assert_eq!(&text[h[1].body_start..h[2].start], "\nUnreleased\n\n-   Drop support. :pr:`1`\n\n");
        assert_eq!(h[0].start, 0);
    }
}
