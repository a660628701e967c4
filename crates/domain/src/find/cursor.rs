//! The cursor of a find's next page: its offset, and a fingerprint of everything that shapes
//! the result list (not the page), so a cursor cannot be replayed against another query.
//!
//! The fingerprint hashes a typed encoding of the request: each part tagged by name, each
//! text length-prefixed, each enum by its wire word, so no two requests encode alike and the
//! encoding does not follow `Debug` output (which a compiler or a new field could change).
//! Cursors made before this encoding are refused as `bad_cursor`: the client starts over.

use super::{Author, FindFilter, FindRequest};
use crate::error::{ErrorCode, ValidationError};
use crate::scope::SCOPE_FIELDS;
use crate::time::Moment;
use sha2::{Digest, Sha256};

/// The furthest offset a cursor may carry.
pub(super) const MAX_OFFSET: usize = 10_000;

/// A SHA-256 fed with tagged parts.
struct Encoder(Sha256);

impl Encoder {
    fn text(&mut self, tag: &str, value: Option<&str>) {
        self.0.update(tag.as_bytes());
        match value {
            None => self.0.update([0]),
            Some(text) => {
                self.0.update([1]);
                self.0.update((text.len() as u64).to_be_bytes());
                self.0.update(text.as_bytes());
            }
        }
    }

    fn texts<'a>(&mut self, tag: &str, values: impl ExactSizeIterator<Item = &'a str>) {
        self.0.update(tag.as_bytes());
        self.0.update((values.len() as u64).to_be_bytes());
        for value in values {
            self.text("", Some(value));
        }
    }

    fn number(&mut self, tag: &str, value: Option<i64>) {
        self.0.update(tag.as_bytes());
        match value {
            None => self.0.update([0]),
            Some(n) => {
                self.0.update([1]);
                self.0.update(n.to_be_bytes());
            }
        }
    }
}

impl Encoder {
    /// An age stays an age: a search's next page counts it back from its own now.
    fn moment(&mut self, tag: &str, value: Option<Moment>) {
        match value {
            Some(Moment::Ago(age)) => self.number(&format!("{tag} ago"), Some(age)),
            Some(Moment::At(t)) => self.number(tag, Some(t)),
            None => self.number(tag, None),
        }
    }
}

impl FindRequest {
    /// A hash of everything that shapes the result list (not the page). The request and its
    /// filters are taken apart whole: a new field does not compile until it is encoded here or
    /// said to shape only the page.
    pub fn fingerprint(&self) -> u64 {
        let FindRequest {
            query,
            ids,
            mode,
            filter,
            scope,
            widen,
            // The page, and how much of each hit it shows: not the list.
            limit: _,
            offset: _,
            max_content_chars: _,
            detail: _,
            // Linked items are added to a page; they do not change which matches it holds.
            expand: _,
            depth: _,
            expand_limit: _,
        } = self;
        let FindFilter { types, since, until, tags, status, author, include_superseded, include_expired } =
            filter;
        let mut e = Encoder(Sha256::new());
        e.text("query", query.as_deref());
        let ids: Vec<String> = ids.iter().map(|id| id.to_string()).collect();
        e.texts("ids", ids.iter().map(String::as_str));
        e.text("mode", Some(mode.as_str()));
        e.texts("types", types.iter().map(|k| k.as_str()));
        e.number("scope", Some(scope.is_some().into()));
        for field in SCOPE_FIELDS {
            e.text(field, scope.as_ref().and_then(|s| s.get(field)));
        }
        e.text("widen", widen.map(|w| w.as_str()));
        e.moment("since", *since);
        e.moment("until", *until);
        e.texts("tags", tags.iter().map(String::as_str));
        e.text("status", status.as_deref());
        // The two readings of one text are two filters.
        let author = author.as_ref().map(|a| match a {
            Author::Principal(t) => format!("principal:{t}"),
            Author::Agent(t) => format!("agent:{t}"),
        });
        e.text("author", author.as_deref());
        e.number("include_superseded", Some((*include_superseded).into()));
        e.number("include_expired", Some((*include_expired).into()));
        let digest = e.0.finalize();
        u64::from_be_bytes(digest[..8].try_into().unwrap_or_default())
    }

    /// The cursor for the page after the one ending at `next_offset`.
    pub fn cursor_at(&self, next_offset: usize) -> String {
        format!("{next_offset:x}.{:016x}", self.fingerprint())
    }
}

/// The offset a cursor carries, when it belongs to the request of `fingerprint`.
pub(super) fn decode(cursor: &str, fingerprint: u64) -> Result<usize, ValidationError> {
    let bad = || {
        ValidationError::new(
            ErrorCode::BadCursor,
            "cursor",
            "`cursor` does not belong to this query",
            "pass the `next_cursor` of the previous page with the same query and filters, or drop `cursor` to start over",
        )
    };
    let (offset, fp) = cursor.split_once('.').ok_or_else(bad)?;
    let offset = usize::from_str_radix(offset, 16).map_err(|_| bad())?;
    let fp = u64::from_str_radix(fp, 16).map_err(|_| bad())?;
    if fp != fingerprint || offset > MAX_OFFSET {
        return Err(bad());
    }
    Ok(offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scope::Scope;

    #[test]
    fn the_fingerprint_tells_apart_what_a_joined_text_would_not() {
        let mut a = FindRequest::query("x");
        a.filter.tags = vec!["a|b".into()];
        let mut b = FindRequest::query("x");
        b.filter.tags = vec!["a".into(), "b".into()];
        assert_ne!(a.fingerprint(), b.fingerprint());
        let mut c = FindRequest::query("x");
        c.scope = Some(Scope { org: Some("acme".into()), ..Scope::default() });
        let mut d = FindRequest::query("x");
        d.scope = Some(Scope { project: Some("acme".into()), ..Scope::default() });
        assert_ne!(c.fingerprint(), d.fingerprint());
        let mut e = FindRequest::query("x");
        e.scope = Some(Scope::default());
        assert_ne!(e.fingerprint(), FindRequest::query("x").fingerprint());
    }

    #[test]
    fn the_page_and_the_budget_do_not_change_the_fingerprint() {
        let a = FindRequest::query("deploy");
        let mut b = a.clone();
        b.limit = 3;
        b.offset = 20;
        b.max_content_chars = 5;
        assert_eq!(a.fingerprint(), b.fingerprint());
    }
}
