//! Stored content as HTML, safely: Markdown through pulldown-cmark with every piece of raw
//! HTML turned into text, images turned into links (a page loads nothing from elsewhere), and
//! link targets kept only when they are http, https, mailto or relative (`javascript:`,
//! `data:` and the like become `#`). What comes out is escaped by pulldown-cmark itself.

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, TagEnd, html};

pub fn to_html(markdown: &str) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let events = Parser::new_ext(markdown, options).map(|event| match event {
        Event::Html(text) | Event::InlineHtml(text) => Event::Text(text),
        Event::Start(Tag::Link { link_type, dest_url, title, id }) => {
            Event::Start(Tag::Link { link_type, dest_url: safe_target(dest_url), title, id })
        }
        Event::Start(Tag::Image { link_type, dest_url, title, id }) => {
            Event::Start(Tag::Link { link_type, dest_url: safe_target(dest_url), title, id })
        }
        Event::End(TagEnd::Image) => Event::End(TagEnd::Link),
        other => other,
    });
    let mut out = String::with_capacity(markdown.len() * 3 / 2);
    html::push_html(&mut out, events);
    out
}

/// The target if a browser would follow it to a page (http, https, mailto, or relative to
/// this server); `#` otherwise.
fn safe_target(target: CowStr<'_>) -> CowStr<'_> {
    let lower = target.trim().to_ascii_lowercase();
    let scheme_end = lower.find(':');
    let path_start = lower.find(['/', '?', '#']);
    let relative = match (scheme_end, path_start) {
        (None, _) => true,
        (Some(colon), Some(path)) => path < colon,
        (Some(_), None) => false,
    };
    let web = ["http://", "https://", "mailto:"].iter().any(|s| lower.starts_with(s));
    if (web || relative) && !lower.chars().any(char::is_control) { target } else { CowStr::Borrowed("#") }
}

#[cfg(test)]
mod tests {
    use super::to_html;

    #[test]
    fn raw_html_is_text() {
        let html = to_html("<script>alert(1)</script>\n\nhi <b onmouseover=x>there</b>");
        assert!(!html.contains("<script") && !html.contains("<b "), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
    }

    #[test]
    fn only_web_and_relative_links_are_kept() {
        for bad in
            ["javascript:alert(1)", "JavaScript:alert(1)", "data:text/html,x", "vbscript:x", "java\tscript:x"]
        {
            let html = to_html(&format!("[x]({bad})"));
            // Not a link at all (a tab is no link target), or a link going nowhere.
            assert!(html.contains("href=\"#\"") || !html.contains("<a"), "{bad}: {html}");
            assert!(!html.to_ascii_lowercase().contains("href=\"java"), "{bad}: {html}");
        }
        for good in ["https://example.com/a", "http://x.org", "mailto:a@b.c", "/items/1", "notes.md", "#top"]
        {
            let html = to_html(&format!("[x]({good})"));
            assert!(html.contains(&format!("href=\"{good}\"")), "{good}: {html}");
        }
    }

    #[test]
    fn images_become_links_and_attributes_stay_quoted() {
        let html = to_html("![pic](https://evil.example/p.png)");
        assert!(!html.contains("<img") && html.contains("<a href=\"https://evil.example/p.png\""), "{html}");
        let html = to_html("[x](https://a.b/\"onmouseover=\"y)");
        assert!(!html.contains("\"onmouseover"), "{html}");
    }
}
