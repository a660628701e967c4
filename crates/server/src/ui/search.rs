//! The search page, `GET /?q=…`: the form with every filter `memory_find` has, and a page of
//! results found exactly as the tool finds them, as the viewer, in the project the picker
//! names (`places`). Without words or kinds it lists the newest items.

use super::Ui;
use super::page::{self, Problem};
use super::places::{self, Picked};
use super::signin::viewer;
use askama::Template;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use cortex_domain::args::shape::Text;
use cortex_domain::find::args::{MODE, SINCE, TAGS, TYPES, UNTIL, WIDEN};
use cortex_domain::find::filter::status_word;
use cortex_domain::find::{Author, Detail, FindFilter};
use cortex_domain::query::validate_query;
use cortex_domain::{FindRequest, Kind, ValidationError};
use cortex_service::ServiceError;
use cortex_service::response::{FindResponse, Hit};
use std::sync::Arc;

/// Results per page.
const PAGE_SIZE: usize = 20;
const MODES: [&str; 3] = ["auto", "fast", "deep"];
/// `""`: each item's own scope, as `memory_find` without `widen`.
const WIDTHS: [&str; 5] = ["", "branch", "project", "org", "all"];

/// The search form as submitted (query string fields, repeated `kind`s kept).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Params {
    pub q: String,
    pub mode: String,
    pub kinds: Vec<String>,
    pub status: String,
    pub tags: String,
    pub widen: String,
    pub since: String,
    pub until: String,
    pub author: String,
    pub cursor: String,
    /// The project picker's choice (`in`): see `places`.
    pub place: String,
}

impl Params {
    pub fn parse(query: Option<&str>) -> Params {
        let mut p = Params::default();
        for (name, value) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            let value = value.trim().to_string();
            match name.as_ref() {
                "q" => p.q = value,
                "mode" => p.mode = value,
                "kind" if !value.is_empty() => p.kinds.push(value),
                "status" => p.status = value,
                "tags" => p.tags = value,
                "widen" => p.widen = value,
                "since" => p.since = value,
                "until" => p.until = value,
                "author" => p.author = value,
                "cursor" => p.cursor = value,
                "in" => p.place = value,
                _ => {}
            }
        }
        p
    }

    /// The find the form asks for, each field read by its argument's own rule (so a bad
    /// value is refused as the tool refuses it), in the order the tool reads them.
    pub fn find_request(&self, picked: &Picked) -> Result<FindRequest, ValidationError> {
        if !self.q.is_empty() {
            validate_query(&self.q)?;
        }
        let text = |value: &str| (!value.is_empty()).then(|| value.to_string());
        let mode = text(&self.mode).map(|m| MODE.shape.parse_str(MODE.name, &m)).transpose()?;
        let kinds = TYPES.shape.parse_strs(TYPES.name, self.kinds.iter().map(String::as_str))?;
        let widen = text(&self.widen).map(|w| WIDEN.shape.parse_str(WIDEN.name, &w)).transpose()?;
        let filter = FindFilter {
            since: text(&self.since).map(|d| SINCE.shape.parse_str(SINCE.name, &d)).transpose()?,
            until: text(&self.until).map(|d| UNTIL.shape.parse_str(UNTIL.name, &d)).transpose()?,
            tags: TAGS.shape.parse_strs(TAGS.name, self.tags.split(','))?,
            status: text(&self.status).map(|s| status_word(&s)),
            author: text(&self.author).map(|a| Author::parse_arg(&a)).transpose()?,
            ..FindFilter::default()
        };
        let mut request = match self.q.as_str() {
            // Nothing asked: the newest items of every kind.
            "" if kinds.is_empty() => FindRequest::newest(Kind::ALL.iter().copied()),
            "" => FindRequest::newest(kinds),
            q => FindRequest::query(q).with_types(kinds),
        };
        request.filter = FindFilter { types: std::mem::take(&mut request.filter.types), ..filter };
        request.mode = mode.unwrap_or(request.mode);
        let (scope, picked_widen) = picked.scope_and_widen();
        request.scope = scope;
        request.widen = widen.or(picked_widen);
        let request = request.with_limit(PAGE_SIZE).with_detail(Detail::Brief);
        match self.cursor.as_str() {
            "" => Ok(request),
            cursor => request.after(&Text::of(cursor)),
        }
    }

    /// This search's page at `cursor` (its first page without one).
    pub fn page_at(&self, cursor: Option<&str>) -> String {
        let mut url = form_urlencoded::Serializer::new(String::new());
        for (name, value) in [
            ("q", &self.q),
            ("mode", &self.mode),
            ("status", &self.status),
            ("tags", &self.tags),
            ("widen", &self.widen),
            ("since", &self.since),
            ("until", &self.until),
            ("author", &self.author),
            ("in", &self.place),
        ] {
            if !value.is_empty() {
                url.append_pair(name, value);
            }
        }
        for kind in &self.kinds {
            url.append_pair("kind", kind);
        }
        if let Some(cursor) = cursor {
            url.append_pair("cursor", cursor);
        }
        format!("/?{}", url.finish())
    }

    fn filtered(&self) -> bool {
        !(self.kinds.is_empty()
            && self.status.is_empty()
            && self.tags.is_empty()
            && self.widen.is_empty()
            && self.since.is_empty()
            && self.until.is_empty()
            && self.author.is_empty())
    }
}

pub struct Choice {
    pub value: String,
    pub on: bool,
}

fn choices(values: &[&str], chosen: impl Fn(&str) -> bool) -> Vec<Choice> {
    values.iter().map(|v| Choice { value: v.to_string(), on: chosen(v) }).collect()
}

pub struct Form {
    pub q: String,
    pub places: Vec<places::Choice>,
    pub modes: Vec<Choice>,
    pub kinds: Vec<Choice>,
    pub widths: Vec<Choice>,
    pub status: String,
    pub tags: String,
    pub since: String,
    pub until: String,
    pub author: String,
    pub filtered: bool,
}

impl Form {
    fn of(p: &Params, places: Vec<places::Choice>) -> Form {
        let mode = if p.mode.is_empty() { "auto" } else { p.mode.as_str() };
        let kinds: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
        Form {
            q: p.q.clone(),
            places,
            modes: choices(&MODES, |m| m == mode),
            kinds: choices(&kinds, |k| p.kinds.iter().any(|c| c == k)),
            widths: choices(&WIDTHS, |w| w == p.widen),
            status: p.status.clone(),
            tags: p.tags.clone(),
            since: p.since.clone(),
            until: p.until.clone(),
            author: p.author.clone(),
            filtered: p.filtered(),
        }
    }
}

/// One result line.
pub struct HitLine {
    pub id: String,
    pub kind: String,
    pub title: String,
    /// The snippet in pieces, `true` for the words it marks as matching.
    pub snippet: Vec<(String, bool)>,
    pub scope: String,
    pub status: String,
    pub updated: page::When,
}

impl HitLine {
    fn of(hit: &Hit, now: i64) -> HitLine {
        let updated = match cortex_domain::time::parse_instant(&hit.updated_at) {
            Ok(at) => page::When::at(at, now),
            Err(_) => page::When { iso: hit.updated_at.clone(), ago: hit.updated_at.clone() },
        };
        HitLine {
            id: hit.id.to_string(),
            kind: hit.kind.as_str().to_string(),
            title: hit.title.clone(),
            snippet: marked(&hit.snippet),
            scope: hit.scope.as_ref().map(scope_label).unwrap_or_default(),
            status: hit.status.clone().unwrap_or_default(),
            updated,
        }
    }
}

/// A snippet's pieces: the find marks matching words `**so**`; every other piece is plain
/// text (and escaped as such by the template).
pub fn marked(snippet: &str) -> Vec<(String, bool)> {
    snippet
        .split("**")
        .enumerate()
        .filter(|(_, piece)| !piece.is_empty())
        .map(|(i, piece)| (piece.to_string(), i % 2 == 1))
        .collect()
}

/// A scope as one line: `org / project / branch …`, the levels it has.
pub fn scope_label(scope: &cortex_domain::Scope) -> String {
    cortex_domain::scope::SCOPE_FIELDS
        .iter()
        .filter_map(|f| scope.get(f).map(|v| format!("{f}={v}")))
        .collect::<Vec<_>>()
        .join(" ")
}

#[derive(Template)]
#[template(path = "ui/search.html")]
struct SearchPage {
    chrome: Option<page::Chrome>,
    form: Form,
    problem: Option<Problem>,
    heading: String,
    hits: Vec<HitLine>,
    notes: Vec<String>,
    next_page: Option<String>,
    previous_page: Option<String>,
}

pub async fn page(State(ui): State<Ui>, headers: HeaderMap, uri: Uri) -> Response {
    let viewer = match viewer(&ui, &headers).await {
        Ok(v) => v,
        Err(answer) => return answer,
    };
    let params = Params::parse(uri.query());
    let caller = &viewer.principal.caller;
    let local = caller.bound.is_none();
    let standing = scope_label(&caller.scope);
    let service = Arc::new(ui.app.service.for_caller(caller));
    let asked = params.clone();
    let found = tokio::task::spawn_blocking(move || {
        let places = service.memory_find().places()?;
        let search = places::pick(&places, &asked.place, local).map(|picked| {
            let request = asked.find_request(&picked);
            let previous = request.as_ref().ok().and_then(previous_page(&asked));
            let offset = request.as_ref().map_or(0, |r| r.offset);
            (
                picked,
                previous,
                offset,
                request.map_err(ServiceError::Invalid).and_then(|r| service.memory_find().find(&r)),
            )
        });
        Ok::<_, ServiceError>((places, search))
    })
    .await;
    let mut page = SearchPage {
        chrome: Some(viewer.chrome()),
        form: Form::of(&params, Vec::new()),
        problem: None,
        heading: String::new(),
        hits: Vec::new(),
        notes: Vec::new(),
        next_page: None,
        previous_page: None,
    };
    let status = match found {
        Ok(Ok((places, Ok((picked, previous, offset, found))))) => {
            page.form.places = places::choices(&places, &picked, Some(&standing));
            page.previous_page = previous;
            answered(&mut page, &params, offset, found)
        }
        Ok(Ok((places, Err(refused)))) => {
            page.form.places = places::choices(&places, &Picked::Standing, Some(&standing));
            page.problem = Some(Problem::new(refused, "pick one from the list, or “all projects”"));
            StatusCode::BAD_REQUEST
        }
        Ok(Err(e)) => answered(&mut page, &params, 0, Err(e)),
        Err(e) => {
            page.problem = Some(Problem::new(format!("the search failed: {e}"), "retry"));
            StatusCode::INTERNAL_SERVER_ERROR
        }
    };
    viewer.answer(page::html(status, &page))
}

/// The link to the page before `request`'s, when it is not the first.
fn previous_page(params: &Params) -> impl Fn(&FindRequest) -> Option<String> + '_ {
    move |request| match request.offset {
        0 => None,
        n if n <= PAGE_SIZE => Some(params.page_at(None)),
        n => Some(params.page_at(Some(&request.cursor_at(n - PAGE_SIZE)))),
    }
}

fn answered(
    page: &mut SearchPage,
    params: &Params,
    offset: usize,
    found: Result<FindResponse, ServiceError>,
) -> StatusCode {
    match found {
        Ok(response) => {
            fill(page, params, offset, &response);
            StatusCode::OK
        }
        Err(ServiceError::Invalid(e)) => {
            page.problem = Some(Problem::from(&e));
            StatusCode::BAD_REQUEST
        }
        Err(e) => {
            tracing::error!(error = %e, "web UI search failed");
            page.problem = Some(Problem::new(
                e.to_string(),
                "a server-side failure, not your search: retry; if it persists, run `cortex doctor`",
            ));
            StatusCode::INTERNAL_SERVER_ERROR
        }
    }
}

fn fill(page: &mut SearchPage, params: &Params, offset: usize, response: &FindResponse) {
    page.hits =
        response.hits.iter().filter(|h| !h.expanded).map(|h| HitLine::of(h, page::now_ms())).collect();
    page.heading = heading(&params.q, offset, page.hits.len(), response.next_cursor.is_some());
    page.notes = response.notes.clone();
    page.notes.extend(response.suggestions.iter().map(|s| s.to_string()));
    page.next_page = response.next_cursor.as_deref().map(|c| params.page_at(Some(c)));
}

/// What the page says it shows: a count only when it is the whole answer, else which results
/// these are, and that more follow.
fn heading(q: &str, offset: usize, shown: usize, more: bool) -> String {
    match (q.is_empty(), shown, offset > 0 || more) {
        (true, _, false) => "Newest".to_string(),
        (true, n, true) => format!("Newest, {}–{}", offset + 1, offset + n),
        (false, 0, _) => format!("Nothing found for “{q}”"),
        (false, 1, false) => format!("1 result for “{q}”"),
        (false, n, false) => format!("{n} results for “{q}”"),
        (false, n, true) => {
            format!(
                "Results {}–{} for “{q}”{}",
                offset + 1,
                offset + n,
                if more { ", more on the next page" } else { "" }
            )
        }
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_form_becomes_the_request_its_arguments_parse_to() {
        let p = Params::parse(Some(
            "q=auth+tokens&mode=deep&kind=decision&kind=issue&tags=a,+B&widen=org&status=In+progress&since=2026-01-01&author=key%3Aacme%2Fci&x=1",
        ));
        let sent = json!({"query": "auth tokens", "mode": "deep", "types": ["decision", "issue"],
            "tags": ["a", "b"], "widen": "org", "status": "in progress", "since": "2026-01-01",
            "author": "key:acme/ci",
            "limit": PAGE_SIZE, "detail": "brief"});
        assert_eq!(p.find_request(&Picked::Standing).unwrap(), FindRequest::from_json(&sent).unwrap());
        let empty_status = Params::parse(Some("q=x&status="));
        assert_eq!(empty_status.find_request(&Picked::Standing).unwrap().filter.status, None);
    }

    #[test]
    fn no_words_list_the_newest_of_every_kind() {
        let request = Params::parse(None).find_request(&Picked::Standing).unwrap();
        assert_eq!(request.filter.types.len(), Kind::ALL.len());
        assert!(request.check().is_ok());
    }

    #[test]
    fn since_takes_an_age_or_a_date() {
        for since in ["7d", "2w", "36h", "2026-01-01"] {
            let p = Params::parse(Some(&format!("q=x&since={since}")));
            assert!(p.find_request(&Picked::Standing).unwrap().filter.since.is_some(), "{since}");
        }
    }

    #[test]
    fn a_bad_field_is_refused_as_the_tool_refuses_it() {
        for (query, field) in [
            ("q=x&since=yesterday-ish", "since"),
            ("q=x&mode=quick", "mode"),
            ("q=x&kind=nope", "types[0]"),
            ("q=x&cursor=zz", "cursor"),
        ] {
            let refused = Params::parse(Some(query)).find_request(&Picked::Standing).unwrap_err();
            assert_eq!(refused.field, field, "{query}");
        }
        let next = FindRequest::query("x").with_limit(PAGE_SIZE).with_detail(Detail::Brief).cursor_at(20);
        assert_eq!(
            Params::parse(Some(&format!("q=x&cursor={next}")))
                .find_request(&Picked::Standing)
                .unwrap()
                .offset,
            20
        );
    }

    #[test]
    fn matches_are_marked_pieces() {
        assert_eq!(
            marked("a **b** c"),
            vec![("a ".to_string(), false), ("b".to_string(), true), (" c".to_string(), false)]
        );
        assert_eq!(marked("plain"), vec![("plain".to_string(), false)]);
    }

    #[test]
    fn the_next_page_keeps_the_search() {
        let p = Params::parse(Some("q=a%26b&kind=decision"));
        let next = p.page_at(Some("c1"));
        assert_eq!(Params::parse(next.strip_prefix("/?")), Params { cursor: "c1".into(), ..p.clone() });
        assert_eq!(Params::parse(p.page_at(None).strip_prefix("/?")), p);
    }

    #[test]
    fn a_page_says_which_results_it_shows_when_more_follow() {
        assert_eq!(heading("x", 0, 20, true), "Results 1–20 for “x”, more on the next page");
        assert_eq!(heading("x", 20, 9, false), "Results 21–29 for “x”");
        assert_eq!(heading("x", 0, 9, false), "9 results for “x”");
        assert_eq!(heading("", 0, 20, true), "Newest, 1–20");
        let p = Params::parse(Some("q=x&in=acme%2Fapi"));
        let request = p
            .find_request(&Picked::Standing)
            .unwrap()
            .after(&Text::of(
                &FindRequest::query("x").with_limit(PAGE_SIZE).with_detail(Detail::Brief).cursor_at(40),
            ))
            .unwrap();
        let previous = previous_page(&p)(&request).unwrap();
        let back = Params::parse(previous.strip_prefix("/?"));
        assert_eq!(back.find_request(&Picked::Standing).unwrap().offset, 20, "{previous}");
        assert_eq!(back.place, "acme/api");
    }
}
