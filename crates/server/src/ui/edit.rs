//! The forms a write key curates with, each field by its kind's one definition
//! (`super::fields`): `GET /items/<id>/edit` (an item's fields, tags one per line, Save and
//! "Save as a new version"), `GET /new?kind=…` (a new item of a kind) and `POST /new` (it
//! stored through `memory_store`, with the tool's validation). A refused form comes back with
//! what was typed, the refusal in the page's words beside the field it names, and the button
//! that does what it suggests.

use super::Ui;
use super::curate::{TOOL, writer};
use super::fields::{self, Input, Widget};
use super::item::{find_one, free_text, not_found};
use super::page::{self, Chrome, Problem};
use super::restore::acting;
use super::search::scope_label;
use super::signin::{Viewer, field, viewer};
use askama::Template;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use cortex_domain::api_key::Role;
use cortex_domain::item::{ItemOp, StoreRequest};
use cortex_domain::{Kind, Scope, ValidationError};
use cortex_service::ServiceError;
use cortex_service::response::{ErrorBody, Hit, ItemStatus};
use serde_json::Map;
use uuid::Uuid;

/// A refusal as the form shows it: the field it names (as the form names its input), what is
/// wrong and what to do.
pub struct FieldProblem {
    /// `data.<name>`, `content`, `tags`, or `""` for the item as a whole.
    pub field: String,
    pub problem: Problem,
    /// The item cannot change in place (governance): a new version can hold what was typed.
    pub locked: bool,
}

impl FieldProblem {
    pub fn of(field: &str, message: &str, hint: &str) -> FieldProblem {
        // A store result names the item's place in its batch (`items[0].data.title`).
        let field = match field.strip_prefix("items[") {
            Some(rest) => rest.split_once("].").map_or("", |(_, f)| f),
            None => field,
        };
        FieldProblem { field: field.to_string(), problem: Problem::new(message, hint), locked: false }
    }

    /// The field as the form labels it (`data.alternatives_considered` → `alternatives considered`).
    pub fn label(&self) -> String {
        fields::label(self.field.strip_prefix("data.").unwrap_or(&self.field))
    }

    pub fn from_validation(e: &ValidationError) -> FieldProblem {
        FieldProblem::of(&e.field, &e.message, &e.human_hint)
    }

    pub fn from_body(e: &ErrorBody) -> FieldProblem {
        FieldProblem::of(&e.field, &e.message, &e.human_hint)
    }
}

#[derive(Template)]
#[template(path = "ui/edit.html")]
struct FormPage {
    chrome: Option<Chrome>,
    heading: String,
    /// Where Save posts.
    action: String,
    /// The item edited (`None` for a new one).
    id: Option<String>,
    kind: String,
    scope: String,
    inputs: Vec<Input>,
    /// A free-text item's content.
    content: Option<String>,
    tags: String,
    /// A new item's project and branch, as typed.
    project: String,
    branch: String,
    csrf: String,
    problem: Option<FieldProblem>,
    /// Offer "Save as a new version" first: the refusal says the item cannot change in place.
    new_version_first: bool,
    /// For a new item: the kinds to pick from, with the one picked.
    kinds: Vec<(String, bool)>,
}

impl FormPage {
    /// The problem's text when it names the field `name` (`content`, `tags`, `kind`).
    fn problem_at(&self, name: &str) -> Option<&Problem> {
        self.problem.as_ref().filter(|p| p.field == name).map(|p| &p.problem)
    }

    /// Whether the form puts the cursor in this field: the one a refusal names, else the first.
    fn focus(&self, input: &Input) -> bool {
        match self.problem.as_ref().filter(|p| p.field.starts_with("data.")) {
            Some(_) => self.problem_for(input).is_some(),
            None => self.inputs.first().is_some_and(|first| std::ptr::eq(first, input)),
        }
    }

    /// The problem's text when it names this data field (or a part of it, `data.steps[0]`).
    fn problem_for(&self, input: &Input) -> Option<&Problem> {
        let name = format!("data.{}", input.name);
        self.problem
            .as_ref()
            .filter(|p| {
                p.field == name
                    || p.field.strip_prefix(&name).is_some_and(|rest| rest.starts_with(['[', '.']))
            })
            .map(|p| &p.problem)
    }
}

/// `GET /items/<id>/edit`.
pub async fn page(State(ui): State<Ui>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    let viewer = match viewer(&ui, &headers).await {
        Ok(v) => v,
        Err(answer) => return answer,
    };
    if let Some(refused) = viewer.lacks(Role::Write, "changing an item") {
        return viewer.answer(refused);
    }
    viewer.answer(edit_form(&ui, &viewer, &id, None, StatusCode::OK, None).await)
}

/// The edit form of the item `id`, filled with `typed` (a refused form's fields) or the item's
/// own values.
pub async fn edit_form(
    ui: &Ui,
    viewer: &Viewer,
    id: &str,
    typed: Option<&[(String, String)]>,
    status: StatusCode,
    problem: Option<FieldProblem>,
) -> Response {
    let Ok(uuid) = Uuid::parse_str(id) else { return not_found(viewer) };
    let service = ui.app.service.for_caller(&viewer.principal.caller);
    let hit = match tokio::task::spawn_blocking(move || find_one(&service, uuid)).await {
        Ok(Ok(Some(hit))) => hit,
        Ok(Ok(None)) => return not_found(viewer),
        Ok(Err(e)) => return page::server_error("the edit form", e, Some(viewer.chrome())),
        Err(e) => return page::server_error("the edit form", e, Some(viewer.chrome())),
    };
    let new_version_first = problem.as_ref().is_some_and(|p| p.locked);
    let form = FormPage {
        chrome: Some(viewer.chrome()),
        heading: format!("Edit: {}", hit.title),
        action: format!("/items/{id}/edit"),
        id: Some(id.to_string()),
        kind: hit.kind.as_str().to_string(),
        scope: hit.scope.as_ref().map(scope_label).unwrap_or_default(),
        inputs: if free_text(&hit) { Vec::new() } else { stored_inputs(&hit, typed) },
        content: (free_text(&hit) && !hit.content_truncated).then(|| match typed {
            Some(typed) => field(typed, "content").to_string(),
            None => hit.content.clone().unwrap_or_default(),
        }),
        tags: match typed {
            Some(typed) => field(typed, "tags").to_string(),
            None => hit.tags.join("\n"),
        },
        project: String::new(),
        branch: String::new(),
        csrf: viewer.session.csrf.clone(),
        problem,
        new_version_first,
        kinds: Vec::new(),
    };
    page::html(status, &form)
}

fn stored_inputs(hit: &Hit, typed: Option<&[(String, String)]>) -> Vec<Input> {
    let data = hit.data.as_ref().and_then(|d| d.as_object()).cloned().unwrap_or_default();
    fields::inputs(
        hit.kind,
        &|name| match typed {
            Some(typed) if typed.iter().any(|(n, _)| n.strip_prefix("data.") == Some(name)) => {
                Some(field(typed, &format!("data.{name}")).to_string())
            }
            _ => data.get(name).map(fields::form_text),
        },
        Some(&data),
    )
}

/// `GET /new?kind=…`: the form for a new item of a kind (a decision unless one is named).
pub async fn new_page(State(ui): State<Ui>, headers: HeaderMap, uri: Uri) -> Response {
    let viewer = match viewer(&ui, &headers).await {
        Ok(v) => v,
        Err(answer) => return answer,
    };
    if let Some(refused) = viewer.lacks(Role::Write, "storing an item") {
        return viewer.answer(refused);
    }
    let asked = form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
        .find(|(n, _)| n == "kind")
        .map(|(_, v)| v.into_owned());
    let (kind, problem) = match asked.as_deref().map(Kind::parse) {
        None => (Kind::Decision, None),
        Some(Some(kind)) => (kind, None),
        Some(None) => (
            Kind::Decision,
            Some(FieldProblem::of(
                "kind",
                &format!("`{}` is not a kind", asked.unwrap_or_default()),
                &format!("pick one of {}", Kind::names()),
            )),
        ),
    };
    let status = if problem.is_some() { StatusCode::UNPROCESSABLE_ENTITY } else { StatusCode::OK };
    viewer.answer(new_form(&viewer, kind, &[], status, problem))
}

fn new_form(
    viewer: &Viewer,
    kind: Kind,
    typed: &[(String, String)],
    status: StatusCode,
    problem: Option<FieldProblem>,
) -> Response {
    let form = FormPage {
        chrome: Some(viewer.chrome()),
        heading: format!("New {kind}"),
        action: "/new".to_string(),
        id: None,
        kind: kind.as_str().to_string(),
        scope: String::new(),
        inputs: fields::inputs(
            kind,
            &|name| Some(field(typed, &format!("data.{name}")).to_string()).filter(|v| !v.is_empty()),
            None,
        ),
        content: None,
        tags: field(typed, "tags").to_string(),
        project: field(typed, "scope.project").to_string(),
        branch: field(typed, "scope.branch").to_string(),
        csrf: viewer.session.csrf.clone(),
        problem,
        new_version_first: false,
        kinds: Kind::ALL.iter().map(|k| (k.as_str().to_string(), *k == kind)).collect(),
    };
    page::html(status, &form)
}

/// `POST /new`: the form's item stored through `memory_store` as the signed-in key; its page
/// when stored, the form again (what was typed kept) when refused.
pub async fn create(State(ui): State<Ui>, request: Request) -> Response {
    let (viewer, typed) = match writer(&ui, request).await {
        Ok(found) => found,
        Err(answer) => return answer,
    };
    let Some(kind) = Kind::parse(field(&typed, "kind")) else {
        let problem =
            FieldProblem::of("kind", "no kind was picked", &format!("pick one of {}", Kind::names()));
        return new_form(&viewer, Kind::Decision, &typed, StatusCode::UNPROCESSABLE_ENTITY, Some(problem));
    };
    let data = fields::data_from_form(kind, &Map::new(), &typed);
    let tags = fields::lines(field(&typed, "tags"));
    let mut item = ItemOp::insert(kind).data(data).tags(&tags);
    // Blank: the scope the key (or the server's checkout) stands in, as memory_store fills it.
    let named: Map<String, serde_json::Value> = ["project", "branch"]
        .into_iter()
        .map(|name| (name, field(&typed, &format!("scope.{name}")).trim()))
        .filter(|(_, value)| !value.is_empty())
        .map(|(name, value)| (name.to_string(), serde_json::Value::String(value.to_string())))
        .collect();
    if !named.is_empty() {
        match Scope::from_json(&serde_json::Value::Object(named)) {
            Ok(scope) => item = item.scope(scope),
            Err(e) => {
                return new_form(
                    &viewer,
                    kind,
                    &typed,
                    StatusCode::UNPROCESSABLE_ENTITY,
                    Some(FieldProblem::from_validation(&e)),
                );
            }
        }
    }
    let item = item.source(&viewer.principal.key, TOOL).build();
    let service = ui.app.service.for_caller(&acting(&viewer));
    let stored =
        tokio::task::spawn_blocking(move || service.memory_store().store(&StoreRequest::new([item]))).await;
    let refused = |problem| new_form(&viewer, kind, &typed, StatusCode::UNPROCESSABLE_ENTITY, Some(problem));
    let result = match stored {
        Ok(Ok(response)) => response.results.into_iter().next(),
        Ok(Err(ServiceError::Invalid(e))) => return refused(FieldProblem::from_validation(&e)),
        Ok(Err(e)) => return page::server_error("storing the new item", e, Some(viewer.chrome())),
        Err(e) => return page::server_error("storing the new item", e, Some(viewer.chrome())),
    };
    let Some(result) = result else {
        return page::server_error(
            "storing the new item",
            "the store answered no result",
            Some(viewer.chrome()),
        );
    };
    match (result.status, result.id, result.existing_id) {
        (ItemStatus::Inserted | ItemStatus::Updated, Some(id), _) => page::see_other(&format!("/items/{id}")),
        (ItemStatus::SkippedDedupe, _, Some(existing)) => page::see_other(&format!("/items/{existing}")),
        _ => match result.error {
            Some(e) => refused(FieldProblem::from_body(&e)),
            None => refused(FieldProblem::of(
                "",
                &result.reason.unwrap_or_else(|| "not stored".into()),
                "change the values and save again",
            )),
        },
    }
}
