//! The activity page's filters and its feed of changes: who (the principal the server
//! established, the agent and session the client claimed), what (each item's title and kind),
//! when; the changes one batch made as one line.

use super::page::When;
use super::places::{Picked, Refused};
use cortex_domain::time::{MILLIS_PER_DAY, format_instant, parse_instant};
use cortex_service::audit::ItemLabel;
use cortex_store::AuditRecord;
use std::collections::{BTreeSet, HashMap};
use uuid::Uuid;

/// Items a batch's line names by title; the rest are counted.
const NAMED_PER_BATCH: usize = 5;

/// The filters of the activity page, as its GET form sends them (kept in the URL).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Filters {
    pub kind: String,
    pub principal: String,
    pub agent: String,
    pub session: String,
    /// `YYYY-MM-DD`, a day of the window.
    pub day: String,
    /// The project picker's choice (`in`, see `places`): everything in reach when empty.
    pub place: String,
}

impl Filters {
    pub fn parse(query: Option<&str>) -> Filters {
        let mut f = Filters::default();
        for (name, value) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            let value = value.trim().to_string();
            match name.as_ref() {
                "kind" => f.kind = value,
                "principal" => f.principal = value,
                "agent" => f.agent = value,
                "session" => f.session = value,
                "day" => f.day = value,
                "in" => f.place = value,
                _ => {}
            }
        }
        f
    }

    /// The day filter's first millisecond.
    fn day_start(&self) -> Result<Option<i64>, Refused> {
        if self.day.is_empty() {
            return Ok(None);
        }
        match parse_instant(&self.day) {
            Ok(t) if self.day.len() == 10 => Ok(Some(t)),
            _ => Err(Refused::Day(self.day.clone())),
        }
    }

    /// The records these filters keep, `place` being the picker's choice.
    pub fn apply(&self, records: Vec<AuditRecord>, place: &Picked) -> Result<Vec<AuditRecord>, Refused> {
        let day = self.day_start()?;
        let same = |wanted: &str, value: Option<&str>| wanted.is_empty() || value == Some(wanted);
        Ok(records
            .into_iter()
            .filter(|r| {
                same(&self.kind, r.kind.as_deref())
                    && same(&self.principal, principal_of(r).as_deref())
                    && same(&self.agent, r.claimed.actor.as_deref())
                    && same(&self.session, r.claimed.session.as_deref())
                    && day.is_none_or(|start| (start..start + MILLIS_PER_DAY).contains(&r.at))
                    && place.holds(&r.scope)
            })
            .collect())
    }

    pub fn any(&self) -> bool {
        *self != Filters::default()
    }

    /// This page's URL with `day` set to `date`, the other filters kept.
    pub fn with_day(&self, date: &str) -> String {
        let mut url = form_urlencoded::Serializer::new(String::new());
        for (name, value) in [
            ("kind", self.kind.as_str()),
            ("principal", &self.principal),
            ("agent", &self.agent),
            ("session", &self.session),
            ("day", date),
            ("in", &self.place),
        ] {
            if !value.is_empty() {
                url.append_pair(name, value);
            }
        }
        format!("/activity?{}", url.finish())
    }
}

/// Who made a change, as the server established it (records older than the principal name
/// none).
fn principal_of(r: &AuditRecord) -> Option<String> {
    r.principal.clone()
}

/// The values each filter can take in the window, for the form's choices.
#[derive(Default)]
pub struct Choices {
    pub kinds: Vec<String>,
    pub principals: Vec<String>,
    pub agents: Vec<String>,
    pub sessions: Vec<String>,
    /// The project picker's options.
    pub places: Vec<super::places::Choice>,
}

impl Choices {
    pub fn of(records: &[AuditRecord]) -> Choices {
        let mut sets: [BTreeSet<String>; 4] = Default::default();
        for r in records {
            for (set, value) in sets.iter_mut().zip([
                r.kind.clone(),
                principal_of(r),
                r.claimed.actor.clone(),
                r.claimed.session.clone(),
            ]) {
                set.extend(value);
            }
        }
        let [kinds, principals, agents, sessions] = sets.map(|s| s.into_iter().collect());
        Choices { kinds, principals, agents, sessions, places: Vec::new() }
    }
}

/// An item a line names.
pub struct ItemRef {
    pub id: Uuid,
    pub kind: String,
    /// Its title; for an item no longer stored (purged) or out of reach, the change's summary.
    pub title: String,
    pub deleted: bool,
}

/// One line of the feed: one change, or every change of one batch.
pub struct Line {
    pub when: When,
    pub operation: String,
    pub items: Vec<ItemRef>,
    /// Items of the batch beyond those named.
    pub more: usize,
    /// How many changes the line stands for.
    pub changes: usize,
    /// Per kind, for a batch: `decision ×3, todo ×2`.
    pub kinds: String,
    pub principal: String,
    pub agent: String,
    pub session: String,
    pub summary: String,
}

/// The newest `lines` lines of `records` (oldest first): consecutive records of one batch make
/// one line. Titles are filled later by [`name`].
pub fn lines(records: &[AuditRecord], now: i64, lines: usize) -> Vec<Line> {
    let mut out: Vec<Line> = Vec::new();
    let mut batch: Option<&str> = None;
    for r in records.iter().rev() {
        let joins = r.batch_id.is_some() && r.batch_id.as_deref() == batch && !out.is_empty();
        if !joins {
            if out.len() == lines {
                break;
            }
            out.push(Line {
                when: When::at(r.at, now),
                operation: r.operation.clone(),
                items: Vec::new(),
                more: 0,
                changes: 0,
                kinds: String::new(),
                principal: principal_of(r).unwrap_or_default(),
                agent: r.claimed.actor.clone().unwrap_or_default(),
                session: r.claimed.session.clone().unwrap_or_default(),
                summary: r.summary.clone(),
            });
        }
        batch = r.batch_id.as_deref();
        let line = out.last_mut().expect("a line was pushed");
        line.changes += 1;
        if line.operation != r.operation && !line.operation.ends_with(" …") {
            line.operation.push_str(" …");
        }
        if let Some(id) = r.item_id
            && !line.items.iter().any(|i| i.id == id)
        {
            let kind = r.kind.clone().unwrap_or_default();
            line.items.push(ItemRef { id, kind, title: r.summary.clone(), deleted: false });
        }
    }
    out.into_iter()
        .map(|mut line| {
            let mut per_kind: Vec<(String, usize)> = Vec::new();
            for ItemRef { kind, .. } in &line.items {
                match per_kind.iter_mut().find(|(k, _)| k == kind) {
                    Some((_, n)) => *n += 1,
                    None => per_kind.push((kind.clone(), 1)),
                }
            }
            if line.items.len() > 1 {
                line.kinds = per_kind.iter().map(|(k, n)| format!("{k} ×{n}")).collect::<Vec<_>>().join(", ");
            }
            line.more = line.items.len().saturating_sub(NAMED_PER_BATCH);
            line.items.truncate(NAMED_PER_BATCH);
            line
        })
        .collect()
}

/// The items every line names, to look their titles up.
pub fn named(lines: &[Line]) -> Vec<Uuid> {
    let mut ids: Vec<Uuid> = lines.iter().flat_map(|l| l.items.iter().map(|i| i.id)).collect();
    ids.sort();
    ids.dedup();
    ids
}

/// Each line's items with their stored titles and kinds.
pub fn name(lines: &mut [Line], labels: &[ItemLabel]) {
    let by_id: HashMap<Uuid, &ItemLabel> = labels.iter().map(|l| (l.id, l)).collect();
    for item in lines.iter_mut().flat_map(|l| l.items.iter_mut()) {
        if let Some(label) = by_id.get(&item.id) {
            item.title =
                if label.title.is_empty() { label.kind.as_str().to_string() } else { label.title.clone() };
            item.kind = label.kind.as_str().to_string();
            item.deleted = label.deleted;
        } else if item.title.is_empty() {
            item.title = format!("item {}", &item.id.to_string()[..8]);
        }
    }
}

/// Distinct items changed per kind, most first (an item changed three times counts once).
pub fn items_per_kind(records: &[AuditRecord]) -> Vec<(String, usize)> {
    let mut items: HashMap<String, BTreeSet<Uuid>> = HashMap::new();
    for r in records {
        if let Some(id) = r.item_id {
            items.entry(r.kind.clone().unwrap_or_else(|| "-".into())).or_default().insert(id);
        }
    }
    let mut kinds: Vec<(String, usize)> = items.into_iter().map(|(k, ids)| (k, ids.len())).collect();
    kinds.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    kinds
}

/// The day a record falls on, as the filter and the table name it.
pub fn date_of(millis: i64) -> String {
    format_instant(millis)[..10].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::activity::tests::record;
    use cortex_domain::Kind;

    fn with(
        mut r: AuditRecord,
        principal: &str,
        agent: &str,
        session: &str,
        batch: Option<&str>,
    ) -> AuditRecord {
        r.principal = Some(principal.into());
        r.claimed.actor = Some(agent.into());
        r.claimed.session = Some(session.into());
        r.batch_id = batch.map(str::to_string);
        r
    }

    #[test]
    fn a_batch_is_one_line_naming_its_items_and_kinds() {
        let now = 10 * MILLIS_PER_DAY;
        let mut records: Vec<AuditRecord> = (0..7)
            .map(|i| {
                with(
                    record(now - 100 + i, "insert", if i < 4 { "decision" } else { "todo" }),
                    "key:acme/ana",
                    "claude-code",
                    "s1",
                    Some("b1"),
                )
            })
            .collect();
        records.push(with(record(now - 10, "update", "decision"), "local:dana", "codex", "s2", Some("b2")));
        let feed = lines(&records, now, 50);
        assert_eq!(feed.len(), 2);
        assert_eq!(
            (feed[0].operation.as_str(), feed[0].principal.as_str(), feed[0].agent.as_str()),
            ("update", "local:dana", "codex")
        );
        assert_eq!((feed[1].changes, feed[1].items.len(), feed[1].more), (7, NAMED_PER_BATCH, 2));
        assert_eq!(feed[1].kinds, "todo ×3, decision ×4");
        let only = lines(&records, now, 1);
        assert_eq!(only.len(), 1, "the limit counts lines, not records");
    }

    #[test]
    fn titles_come_from_the_store_and_items_count_once_per_kind() {
        let now = 10 * MILLIS_PER_DAY;
        let a = record(now - 50, "insert", "decision");
        let mut a2 = record(now - 40, "update", "decision");
        a2.item_id = a.item_id;
        let b = record(now - 30, "insert", "todo");
        let records = vec![a.clone(), a2, b];
        assert_eq!(items_per_kind(&records), vec![("decision".to_string(), 1), ("todo".to_string(), 1)]);
        let mut feed = lines(&records, now, 50);
        let labels = vec![ItemLabel {
            id: a.item_id.unwrap(),
            kind: Kind::Decision,
            title: "Use HMAC".into(),
            deleted: false,
        }];
        name(&mut feed, &labels);
        assert_eq!(feed[1].items[0].title, "Use HMAC");
        assert!(feed[0].items[0].title.starts_with("item "), "an item out of reach keeps no title");
    }

    #[test]
    fn filters_keep_what_they_name_and_refuse_a_bad_day() {
        let now = 10 * MILLIS_PER_DAY;
        let records = vec![
            with(record(now - 50, "insert", "decision"), "key:acme/ana", "claude-code", "s1", None),
            with(record(now - 2 * MILLIS_PER_DAY, "insert", "todo"), "key:acme/bo", "codex", "s2", None),
        ];
        let kept = |q: &str| Filters::parse(Some(q)).apply(records.clone(), &Picked::All).unwrap().len();
        assert_eq!(kept(""), 2);
        assert_eq!(kept("principal=key%3Aacme%2Fana"), 1);
        assert_eq!(kept("agent=codex&session=s2"), 1);
        assert_eq!(kept("agent=codex&session=s1"), 0);
        assert_eq!(kept(&format!("day={}", date_of(now - 2 * MILLIS_PER_DAY))), 1);
        assert_eq!(kept("kind=decision"), 1);
        let refused = Filters::parse(Some("day=yesterday")).apply(records, &Picked::All).unwrap_err();
        assert_eq!(refused, Refused::Day("yesterday".into()));
        assert!(refused.to_string().starts_with("day: “yesterday”"), "{refused}");
        let f = Filters::parse(Some("agent=codex"));
        assert_eq!(
            Filters::parse(f.with_day("2026-01-02").strip_prefix("/activity?")),
            Filters { day: "2026-01-02".into(), ..f }
        );
    }
}
