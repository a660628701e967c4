//! An item's `data` fields as a person reads and edits them, by the type the kind's one
//! definition gives each (`cortex_domain::kind`): text as Markdown, lists as lists, dates as
//! dates, enumerations as a badge to read and a `<select>` to edit. A field the kind does not
//! define (older data) is shown as the JSON it is.

use super::markdown;
use super::page::When;
use super::steps;
use cortex_domain::Kind;
use cortex_domain::kind::{FieldSpec, FieldType, TitleRule};
use serde_json::{Map, Value};

/// How one field is shown.
pub enum Shown {
    /// A one-line text.
    Line(String),
    /// Free text rendered from Markdown (safe HTML).
    Markdown(String),
    List(Vec<String>),
    Date(When),
    Badge(String),
    /// Another item, by id.
    Item(String),
    /// A runbook's steps: description, command, expected outcome.
    Steps(Vec<(String, String, String)>),
    /// A value the kind does not define this way, as JSON.
    Raw(String),
}

pub struct FieldView {
    pub name: String,
    pub label: String,
    pub shown: Shown,
}

/// A field's label: its name with spaces (`alternatives_considered` → `alternatives considered`).
pub fn label(name: &str) -> String {
    name.replace('_', " ")
}

/// The item's data fields in the kind's order, then any the kind does not define; not the
/// field that is the whole title, nor the status field (the page shows both above them).
pub fn shown(kind: Kind, data: &Map<String, Value>) -> Vec<FieldView> {
    let spec = kind.spec();
    let specs = spec.fields;
    let on_top = |name: &str| {
        matches!(spec.title, TitleRule::Field(f) if f == name) || spec.status_field == Some(name)
    };
    let defined = specs
        .iter()
        .filter(|s| !on_top(s.name))
        .filter_map(|spec| data.get(spec.name).map(|value| (spec.name, Some(spec), value)));
    let others = data
        .iter()
        .filter(|(name, _)| !specs.iter().any(|s| s.name == name.as_str()))
        .map(|(name, value)| (name.as_str(), None, value));
    defined
        .chain(others)
        .filter(|(_, _, value)| !is_blank(value))
        .map(|(name, spec, value)| FieldView {
            name: name.to_string(),
            label: label(name),
            shown: show(spec.map(|s| &s.ty), value),
        })
        .collect()
}

fn is_blank(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.trim().is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

fn show(ty: Option<&FieldType>, value: &Value) -> Shown {
    match (ty, value) {
        (Some(FieldType::Text), Value::String(s)) => Shown::Markdown(markdown::to_html(s)),
        (Some(FieldType::Enum(_)), Value::String(s)) => Shown::Badge(s.clone()),
        (Some(FieldType::Date), Value::String(s)) => {
            When::parse(s).map_or(Shown::Line(s.clone()), Shown::Date)
        }
        (Some(FieldType::ItemId | FieldType::ItemRef), Value::String(s)) => Shown::Item(s.clone()),
        (Some(FieldType::ShortList), Value::Array(list)) => Shown::List(list.iter().map(text).collect()),
        (Some(FieldType::Steps), Value::Array(steps)) => Shown::Steps(
            steps
                .iter()
                .map(|s| {
                    let part = |name: &str| s.get(name).map(text).unwrap_or_default();
                    (part("description"), part("command"), part("expected_outcome"))
                })
                .collect(),
        ),
        (_, Value::String(s)) => Shown::Line(s.clone()),
        (_, Value::Number(n)) => Shown::Line(n.to_string()),
        (_, other) => Shown::Raw(other.to_string()),
    }
}

fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// One field of the edit and new-item forms.
pub struct Input {
    pub name: String,
    pub label: String,
    pub required: bool,
    /// What the field takes, in a few words (the hint under it).
    pub hint: String,
    pub widget: Widget,
}

pub enum Widget {
    Line(String),
    /// Free text, or a list one entry per line.
    Area {
        value: String,
        rows: u8,
    },
    /// The choices and the one selected (`""`: none yet).
    Select {
        choices: Vec<String>,
        selected: String,
        required: bool,
    },
    /// Kept as stored: runbook steps whose text the form's lines cannot hold exactly.
    Kept(String),
}

/// The form's inputs for `kind`, filled from `values` (what was typed, or the stored data).
/// `stored`: the item's data on an edit (`None`: a new item), whose runbook steps stay as
/// stored when the form's lines could not give them back exactly.
pub fn inputs(
    kind: Kind,
    values: &dyn Fn(&str) -> Option<String>,
    stored: Option<&Map<String, Value>>,
) -> Vec<Input> {
    kind.spec()
        .fields
        .iter()
        .map(|spec| {
            let kept = stored
                .and_then(|data| data.get(spec.name))
                .filter(|value| matches!(spec.ty, FieldType::Steps) && steps::to_text(value).is_none());
            match kept {
                Some(value) => Input {
                    name: spec.name.to_string(),
                    label: label(spec.name),
                    required: spec.required,
                    hint: "kept as stored: a step's text does not fit the form's lines (a description over several lines, say); change them with memory_store".to_string(),
                    widget: Widget::Kept(value.to_string()),
                },
                None => input(spec, values(spec.name).unwrap_or_default()),
            }
        })
        .collect()
}

fn input(spec: &FieldSpec, value: String) -> Input {
    let (hint, widget) = match &spec.ty {
        FieldType::Short => ("one line".to_string(), Widget::Line(value)),
        FieldType::Text => ("Markdown".to_string(), Widget::Area { value, rows: 6 }),
        FieldType::Enum(choices) => (
            format!("one of {}", choices.join(", ")),
            Widget::Select {
                choices: choices.iter().map(|c| c.to_string()).collect(),
                selected: value.to_lowercase(),
                required: spec.required,
            },
        ),
        FieldType::PositiveInt => ("a whole number, 1 or more".to_string(), Widget::Line(value)),
        FieldType::Date => {
            ("a date like 2026-11-22, or 2026-11-22T09:30:00Z".to_string(), Widget::Line(value))
        }
        FieldType::ShortList => ("one per line".to_string(), Widget::Area { value, rows: 3 }),
        FieldType::ItemId => ("an item's id".to_string(), Widget::Line(value)),
        FieldType::Steps => (
            "each step: a line saying what to do, then its command on lines starting with `$ `, \
             then `expect: ` and what should happen; a blank line between steps"
                .to_string(),
            Widget::Area { value, rows: 10 },
        ),
        FieldType::ItemRef => {
            ("the id of an item of this project (an entity's, for instance)".to_string(), Widget::Line(value))
        }
    };
    Input { name: spec.name.to_string(), label: label(spec.name), required: spec.required, hint, widget }
}

/// A stored value as the form shows it: runbook steps in their lines (`steps`), lists one
/// entry per line, numbers as digits, other structures as JSON.
pub fn form_text(value: &Value) -> String {
    match value {
        Value::Array(list) if list.iter().all(|v| !v.is_object()) => {
            list.iter().map(text).collect::<Vec<_>>().join("\n")
        }
        Value::Array(_) => steps::to_text(value).unwrap_or_else(|| value.to_string()),
        other => text(other),
    }
}

/// The data a form's fields make for `kind`, on top of `kept` (the stored data, whose fields
/// the form does not send stay as they are: steps the form keeps as stored are not sent): a
/// blank field is left out; lists are read one entry per line, runbook steps in their lines
/// (`steps`); a whole number as a number (a wrong one is kept as typed, for the kind's rule to
/// refuse naming the field).
pub fn data_from_form(
    kind: Kind,
    kept: &Map<String, Value>,
    form: &[(String, String)],
) -> Map<String, Value> {
    let mut data = kept.clone();
    for spec in kind.spec().fields {
        let Some((_, typed)) = form.iter().find(|(n, _)| n.strip_prefix("data.") == Some(spec.name)) else {
            continue;
        };
        let typed = typed.replace("\r\n", "\n");
        let value = match &spec.ty {
            _ if typed.trim().is_empty() => None,
            FieldType::Steps => Some(steps::from_text(&typed)),
            FieldType::ItemRef => Some(Value::String(typed.trim().to_string())),
            FieldType::ShortList => {
                Some(Value::Array(lines(&typed).into_iter().map(Value::String).collect()))
            }
            FieldType::PositiveInt => Some(
                typed
                    .trim()
                    .parse::<u64>()
                    .map_or_else(|_| Value::String(typed.trim().to_string()), Value::from),
            ),
            FieldType::Short | FieldType::Enum(_) | FieldType::Date | FieldType::ItemId => {
                Some(Value::String(typed.trim().to_string()))
            }
            FieldType::Text => Some(Value::String(typed)),
        };
        match value {
            Some(value) => data.insert(spec.name.to_string(), value),
            None => data.remove(spec.name),
        };
    }
    data
}

/// The non-blank lines of a text, trimmed: a list typed one entry per line (tags too).
pub fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_decision_reads_by_type_and_its_form_round_trips() {
        let data = json!({"component": "auth", "status": "accepted", "title": "Use JWT",
            "rationale": "**stateless**", "alternatives_considered": ["opaque tokens", "cookies"]});
        let data = data.as_object().unwrap();
        let views = shown(Kind::Decision, data);
        let names: Vec<&str> = views.iter().map(|v| v.name.as_str()).collect();
        // The title and the status show above the fields, once.
        assert_eq!(names, ["component", "rationale", "alternatives_considered"]);
        assert!(matches!(&views[1].shown, Shown::Markdown(h) if h.contains("<strong>stateless</strong>")));
        assert!(matches!(&views[2].shown, Shown::List(l) if l == &["opaque tokens", "cookies"]));
        let todo = json!({"title": "Ship", "status": "open", "priority": "high", "due_date": "2026-11-22"});
        let views = shown(Kind::Todo, todo.as_object().unwrap());
        assert!(matches!(&views[0].shown, Shown::Badge(s) if s == "high"));
        assert!(matches!(&views[1].shown, Shown::Date(w) if w.iso.starts_with("2026-11-22T00:00:00")));
        let form = inputs(Kind::Decision, &|name| data.get(name).map(form_text), Some(data));
        assert!(matches!(&form[1].widget, Widget::Select { choices, selected, .. }
            if selected == "accepted" && choices.iter().any(|c| c == "proposed")));
        let typed: Vec<(String, String)> = vec![
            ("data.alternatives_considered".into(), "opaque tokens\r\n\r\n cookies \nsessions".into()),
            ("data.consequences".into(), "  ".into()),
        ];
        let back = data_from_form(Kind::Decision, data, &typed);
        assert_eq!(back["alternatives_considered"], json!(["opaque tokens", "cookies", "sessions"]));
        assert!(!back.contains_key("consequences"));
        assert_eq!(back["rationale"], json!("**stateless**"));
    }

    #[test]
    fn a_runbooks_steps_and_a_relations_ends_round_trip_through_an_unchanged_edit() {
        let runbook = json!({"title": "Rotate the TLS certificate", "steps": [
            {"description": "Issue a new certificate",
             "command": "certbot certonly --cert-name api.example.com\n  --force-renewal",
             "expected_outcome": "Successfully received certificate."},
            {"description": "Reload nginx", "command": "sudo nginx -t && sudo systemctl reload nginx"},
            {"description": "Check the served certificate's dates",
             "command": "openssl s_client -connect api.example.com:443 </dev/null | openssl x509 -noout -dates",
             "expected_outcome": "notAfter about 90 days ahead"}]});
        let data = runbook.as_object().unwrap();
        let form = inputs(Kind::Runbook, &|name| data.get(name).map(form_text), Some(data));
        let steps = form.iter().find(|i| i.name == "steps").unwrap();
        let Widget::Area { value, .. } = &steps.widget else { panic!("the steps are editable") };
        assert!(value.contains("\n$   --force-renewal\nexpect: Successfully received"), "{value}");
        let sent: Vec<(String, String)> = vec![
            ("data.steps".into(), value.replace('\n', "\r\n")),
            ("data.title".into(), "Rotate the TLS certificate".into()),
        ];
        assert_eq!(data_from_form(Kind::Runbook, data, &sent), *data);
        // Steps the lines cannot hold are kept, not sent.
        let odd = json!({"title": "t", "steps": [{"description": "two\nlines"}]});
        let odd = odd.as_object().unwrap();
        let form = inputs(Kind::Runbook, &|name| odd.get(name).map(form_text), Some(odd));
        assert!(form.iter().any(|i| i.name == "steps" && matches!(i.widget, Widget::Kept(_))));
        // A relation's ends are ids on lines of their own.
        let relation = json!({"from": "01a24d32-3268-737c-b925-d63bc4473315",
            "to": "01a24d32-3268-737c-b925-d63aa78d2aaa", "relation_type": "depends_on"});
        let relation = relation.as_object().unwrap();
        let form = inputs(Kind::Relation, &|name| relation.get(name).map(form_text), Some(relation));
        assert!(matches!(&form[0].widget, Widget::Line(v) if v == "01a24d32-3268-737c-b925-d63bc4473315"));
    }
}
