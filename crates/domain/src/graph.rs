//! The knowledge graph: which links a `memory_find` expansion follows, and the walk itself.
//!
//! Links are items too. A `relation` links any two items (`from` → `to`, with a
//! `relation_type`); an `observation` hangs off one entity (entity → observation, shown as
//! `has_observation`). Directions, seen from an item:
//! - `children`: what it points to (its relations' `to` ends) and, for an entity, its
//!   observations;
//! - `parents`: what points to it (relations' `from` ends) and, for an observation, its entity;
//! - `relations`: relations both ways, no observations;
//! - `all`: everything above.
//!
//! The walk is breadth-first, depth by depth, so an item is reached by a shortest path; every
//! item is visited once (cycles end), and it stops when `cap` items were added.

use crate::error::{ErrorCode, ValidationError};
use crate::kind::Kind;
use uuid::Uuid;

/// How far `memory_find` may walk, at most.
pub const MAX_DEPTH: u8 = 3;
pub const DEFAULT_DEPTH: u8 = 1;
/// Items an expansion adds at most by default, and at most when asked.
pub const DEFAULT_EXPAND_LIMIT: usize = 20;
pub const MAX_EXPAND_LIMIT: usize = 100;
/// The link type an observation edge is shown with.
pub const HAS_OBSERVATION: &str = "has_observation";

/// How sure an expansion is that an item `hops` links away from a hit answers the query: the
/// hit's confidence, halved per link.
pub fn confidence_after(seed_confidence: f64, hops: usize) -> f64 {
    seed_confidence * 0.5_f64.powi(hops as i32)
}

/// Which links an expansion follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expand {
    None,
    Relations,
    Parents,
    Children,
    All,
}

impl crate::args::Word for Expand {
    const ALL: &'static [Expand] =
        &[Expand::None, Expand::Relations, Expand::Parents, Expand::Children, Expand::All];

    fn as_str(self) -> &'static str {
        Expand::as_str(self)
    }
}

impl Expand {
    pub fn parse(text: &str) -> Option<Expand> {
        match text.trim().to_ascii_lowercase().as_str() {
            "none" => Some(Expand::None),
            "relations" => Some(Expand::Relations),
            "parents" => Some(Expand::Parents),
            "children" => Some(Expand::Children),
            "all" => Some(Expand::All),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Expand::None => "none",
            Expand::Relations => "relations",
            Expand::Parents => "parents",
            Expand::Children => "children",
            Expand::All => "all",
        }
    }

    /// The item at the other end of `edge`, seen from `node`, if this expansion follows it.
    pub fn follows(self, edge: &Edge, node: Uuid) -> Option<Uuid> {
        let outgoing = edge.from == node;
        let incoming = edge.to == node;
        let (want_out, want_in) = match (self, edge.observation) {
            (Expand::None, _) | (Expand::Relations, true) => (false, false),
            (Expand::Relations | Expand::All, _) => (true, true),
            (Expand::Children, _) => (true, false),
            (Expand::Parents, _) => (false, true),
        };
        if outgoing && want_out {
            Some(edge.to)
        } else if incoming && want_in {
            Some(edge.from)
        } else {
            None
        }
    }
}

/// One link between two items.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    /// The relation item, or the observation itself for an observation edge.
    pub id: Uuid,
    pub from: Uuid,
    pub to: Uuid,
    pub relation_type: String,
    /// An entity → observation edge rather than a relation.
    pub observation: bool,
}

/// An item an expansion reached, and the links that led to it from a seed.
#[derive(Debug, Clone, PartialEq)]
pub struct Reached {
    pub id: Uuid,
    /// The seed the path starts at.
    pub seed: Uuid,
    pub path: Vec<Edge>,
}

/// Walks from `seeds` up to `depth` links away along the links `expand` follows, adding at
/// most `cap` items (seeds are never added). `links(frontier)` returns the live links touching
/// any item of the frontier; `admit(ids)` returns those of the newly reached items that may be
/// shown (live, in the caller's scope). Links are visited in the order `links` returns them.
pub fn walk<E>(
    seeds: &[Uuid],
    expand: Expand,
    depth: u8,
    cap: usize,
    mut links: impl FnMut(&[Uuid]) -> Result<Vec<Edge>, E>,
    mut admit: impl FnMut(&[Uuid]) -> Result<Vec<Uuid>, E>,
) -> Result<Vec<Reached>, E> {
    let mut reached: Vec<Reached> = Vec::new();
    if expand == Expand::None || cap == 0 {
        return Ok(reached);
    }
    let mut visited: std::collections::HashSet<Uuid> = seeds.iter().copied().collect();
    // Each frontier item with the path that reached it (empty for seeds).
    let mut frontier: Vec<(Uuid, Uuid, Vec<Edge>)> = seeds.iter().map(|&s| (s, s, Vec::new())).collect();
    for _ in 0..depth {
        if frontier.is_empty() || reached.len() >= cap {
            break;
        }
        let ids: Vec<Uuid> = frontier.iter().map(|(id, _, _)| *id).collect();
        let edges = links(&ids)?;
        let mut next: Vec<(Uuid, Uuid, Vec<Edge>)> = Vec::new();
        for (node, seed, path) in &frontier {
            for edge in &edges {
                let Some(other) = expand.follows(edge, *node) else { continue };
                if visited.insert(other) {
                    let mut path = path.clone();
                    path.push(edge.clone());
                    next.push((other, *seed, path));
                }
            }
        }
        let candidates: Vec<Uuid> = next.iter().map(|(id, _, _)| *id).collect();
        let admitted = admit(&candidates)?;
        next.retain(|(id, _, _)| admitted.contains(id));
        next.truncate(cap - reached.len());
        reached.extend(next.iter().map(|(id, seed, path)| Reached {
            id: *id,
            seed: *seed,
            path: path.clone(),
        }));
        frontier = next;
    }
    Ok(reached)
}

/// Whether an item of `kind` in `scope` may link to item `target` (of `target_kind`, in
/// `target_scope`): links stay inside one project, and an observation attaches only to an
/// entity. The refusal names no field: the caller knows which reference it checked.
pub fn check_link_target(
    kind: Kind,
    scope: &crate::Scope,
    target: Uuid,
    target_kind: Kind,
    target_scope: &crate::Scope,
) -> Result<(), crate::ValidationError> {
    if scope.project.is_some() && (target_scope.org != scope.org || target_scope.project != scope.project) {
        return Err(ValidationError::new(
            ErrorCode::NotFound,
            "",
            format!(
                "item {target} is in project {}, not in this item's project {}",
                project_label(target_scope),
                project_label(scope)
            ),
            "links stay inside one project: store this item in the scope of the item it links to",
        ));
    }
    if kind == Kind::Observation && target_kind != Kind::Entity {
        return Err(ValidationError::new(
            ErrorCode::KindMismatch,
            "",
            format!("item {target} is a {target_kind}, not an entity"),
            "observations attach to entities; link other items with a relation",
        ));
    }
    Ok(())
}

/// A project named with its org (`acme/api`): two orgs may hold projects of the same name.
fn project_label(scope: &crate::Scope) -> String {
    let part = |value: &Option<String>| value.as_deref().unwrap_or("(none)").to_string();
    format!("{}/{}", part(&scope.org), part(&scope.project))
}

/// The fields of `kind` that reference other items: a relation's `from` and `to`, an
/// observation's `entity`. Empty for every other kind.
pub fn reference_fields(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Relation => &["from", "to"],
        Kind::Observation => &["entity"],
        _ => &[],
    }
}

/// Whether items of `kind` are links of the graph (relations and observations).
pub fn is_link(kind: Kind) -> bool {
    !reference_fields(kind).is_empty()
}

/// The ends of a link as item ids, as the store indexes them: `(from, to)` for a relation,
/// `(entity, None)` for an observation. Only ends already resolved to ids count (an end
/// naming an entity by `{entity_type, name}` is resolved before writing).
pub fn link_ends(kind: Kind, data: &serde_json::Value) -> (Option<Uuid>, Option<Uuid>) {
    let end = |field: &str| data.get(field)?.as_str().and_then(|s| Uuid::parse_str(s).ok());
    match reference_fields(kind) {
        [from, to] => (end(from), end(to)),
        [entity] => (end(entity), None),
        _ => (None, None),
    }
}

/// What deleting or purging an item does to the links whose end it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cascade {
    /// The links go too (softly deleted, audited): a relation or observation means nothing
    /// without its end.
    DeleteLinks,
    /// The links stay.
    KeepLinks,
}

/// The rule for every item that goes: its links go with it.
pub const ON_REMOVAL: Cascade = Cascade::DeleteLinks;

/// An entity stored again merges into the stored one: fields it names win, fields it leaves
/// out keep their stored value (a re-stored name without a description keeps the description).
pub fn merge_entity_data(
    stored: &serde_json::Map<String, serde_json::Value>,
    new: &serde_json::Map<String, serde_json::Value>,
) -> serde_json::Map<String, serde_json::Value> {
    let mut merged = stored.clone();
    merged.extend(new.iter().map(|(k, v)| (k.clone(), v.clone())));
    merged
}

/// A relation may not point at its own start.
pub fn check_not_self_loop(from: Uuid, to: Uuid) -> Result<(), ValidationError> {
    if from == to {
        return Err(ValidationError::new(
            ErrorCode::InvalidValue,
            "data.to",
            format!("a relation from item {from} to itself says nothing"),
            "point `to` at another item; an item's own facts belong in its fields or in observations",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn ids(n: usize) -> Vec<Uuid> {
        (0..n).map(|_| Uuid::now_v7()).collect()
    }

    fn edge(from: Uuid, to: Uuid, relation_type: &str) -> Edge {
        Edge { id: Uuid::now_v7(), from, to, relation_type: relation_type.into(), observation: false }
    }

    /// Runs `walk` over an in-memory edge list where every item is admitted except `hidden`.
    fn run(
        edges: &[Edge],
        seeds: &[Uuid],
        expand: Expand,
        depth: u8,
        cap: usize,
        hidden: &[Uuid],
    ) -> Vec<Reached> {
        let mut calls = 0;
        let result: Result<Vec<Reached>, ()> = walk(
            seeds,
            expand,
            depth,
            cap,
            |frontier| {
                calls += 1;
                Ok(edges
                    .iter()
                    .filter(|e| frontier.contains(&e.from) || frontier.contains(&e.to))
                    .cloned()
                    .collect())
            },
            |new| Ok(new.iter().copied().filter(|id| !hidden.contains(id)).collect()),
        );
        assert!(calls <= depth as usize, "one links call per depth");
        result.unwrap()
    }

    #[test]
    fn a_cycle_ends_and_each_item_comes_once() {
        let n = ids(2);
        let edges = [edge(n[0], n[1], "calls"), edge(n[1], n[0], "calls")];
        let reached = run(&edges, &[n[0]], Expand::All, 3, 10, &[]);
        assert_eq!(reached.len(), 1);
        assert_eq!(reached[0].id, n[1]);
    }

    #[test]
    fn depth_cap_and_direction_are_honoured() {
        // chain 0 → 1 → 2 → 3 → 4
        let n = ids(5);
        let edges: Vec<Edge> = n.windows(2).map(|w| edge(w[0], w[1], "next")).collect();
        let got = |expand, depth, cap| -> Vec<Uuid> {
            run(&edges, &[n[0]], expand, depth, cap, &[]).into_iter().map(|r| r.id).collect()
        };
        assert_eq!(got(Expand::Children, 2, 10), vec![n[1], n[2]]);
        assert_eq!(got(Expand::Children, 3, 2), vec![n[1], n[2]]);
        assert_eq!(got(Expand::Parents, 3, 10), Vec::<Uuid>::new());
        assert_eq!(got(Expand::None, 3, 10), Vec::<Uuid>::new());
        let from_end = run(&edges, &[n[4]], Expand::Parents, 2, 10, &[]);
        assert_eq!(from_end.iter().map(|r| r.id).collect::<Vec<_>>(), vec![n[3], n[2]]);
        assert_eq!(from_end[1].path.len(), 2, "the path holds every link from the seed");
        assert_eq!(from_end[1].seed, n[4]);
    }

    #[test]
    fn observations_are_children_of_their_entity_not_relations() {
        let n = ids(2);
        let obs =
            Edge { id: n[1], from: n[0], to: n[1], relation_type: HAS_OBSERVATION.into(), observation: true };
        assert_eq!(Expand::Children.follows(&obs, n[0]), Some(n[1]));
        assert_eq!(Expand::Parents.follows(&obs, n[1]), Some(n[0]));
        assert_eq!(Expand::Relations.follows(&obs, n[0]), None);
        assert_eq!(Expand::All.follows(&obs, n[1]), Some(n[0]));
    }

    #[test]
    fn hidden_items_are_neither_added_nor_walked_through() {
        // 0 → 1 → 2, with 1 out of scope: 2 stays out of reach.
        let n = ids(3);
        let edges = [edge(n[0], n[1], "a"), edge(n[1], n[2], "b")];
        assert!(run(&edges, &[n[0]], Expand::All, 3, 10, &[n[1]]).is_empty());
    }

    #[test]
    fn paths_are_shortest_on_a_random_graph() {
        // Breadth-first: every reached item's path length is its distance from the seeds.
        let n = ids(40);
        let mut state = 7_u64;
        let mut next = || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) as usize % n.len()
        };
        let edges: Vec<Edge> = (0..80).map(|_| edge(n[next()], n[next()], "r")).collect();
        let reached = run(&edges, &[n[0]], Expand::Relations, 3, 100, &[]);
        let mut distance: HashMap<Uuid, usize> = HashMap::from([(n[0], 0)]);
        let mut frontier = vec![n[0]];
        for d in 1..=3 {
            let mut new = Vec::new();
            for e in &edges {
                for (a, b) in [(e.from, e.to), (e.to, e.from)] {
                    if frontier.contains(&a) && !distance.contains_key(&b) {
                        distance.insert(b, d);
                        new.push(b);
                    }
                }
            }
            frontier = new;
        }
        assert_eq!(reached.len(), distance.len() - 1);
        for r in &reached {
            assert_eq!(r.path.len(), distance[&r.id]);
        }
    }

    #[test]
    fn links_stay_in_their_project_and_observations_attach_to_entities() {
        let at = |project: &str| crate::Scope {
            org: Some("acme".into()),
            project: Some(project.into()),
            ..crate::Scope::default()
        };
        let target = Uuid::now_v7();
        assert!(check_link_target(Kind::Relation, &at("api"), target, Kind::Decision, &at("api")).is_ok());
        let other =
            check_link_target(Kind::Relation, &at("api"), target, Kind::Decision, &at("web")).unwrap_err();
        assert_eq!(other.code, ErrorCode::NotFound);
        let globex = crate::Scope { org: Some("globex".into()), ..at("api") };
        let other_org =
            check_link_target(Kind::Relation, &at("api"), target, Kind::Decision, &globex).unwrap_err();
        assert!(
            other_org.message.contains("in project globex/api, not in this item's project acme/api"),
            "two orgs' projects of one name are told apart: {}",
            other_org.message
        );
        let not_entity =
            check_link_target(Kind::Observation, &at("api"), target, Kind::Decision, &at("api")).unwrap_err();
        assert_eq!(not_entity.code, ErrorCode::KindMismatch);
        assert!(check_link_target(Kind::Observation, &at("api"), target, Kind::Entity, &at("api")).is_ok());
    }
}
