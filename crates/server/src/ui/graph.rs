//! The graph page, `GET /items/<id>/graph?depth=1|2`: the item's neighbourhood as
//! `memory_find` expands it (`expand: all`: relations both ways, parents, children), read as the
//! viewer, drawn as an SVG made on the server — the item in the middle, the items one link
//! away on a ring around it, two links away on an outer ring — every node a link to its page,
//! coloured by its kind (a legend names the colours), each link an arrow from the item that
//! holds the relation to the one it names — and the same edges listed as text.

use super::Ui;
use super::item::not_found;
use super::page::{self, Chrome};
use super::signin::{Viewer, viewer};
use askama::Template;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use cortex_domain::FindRequest;
use cortex_domain::find::Detail;
use cortex_domain::graph::Expand;
use cortex_service::response::{FindResponse, GraphEdge};
use std::collections::{HashMap, VecDeque};
use std::f64::consts::TAU;
use uuid::Uuid;

/// The drawing's width and height (SVG user units; the stylesheet scales it to the page).
const SIZE: f64 = 760.0;
/// Items expanded at most, as `memory_find`'s `expand_limit`.
const MAX_NODES: usize = 40;
const RING: [f64; 3] = [0.0, 170.0, 330.0];
/// A node's radius: the item in the middle, the others.
const RADIUS: [f64; 2] = [14.0, 9.0];
/// One colour per kind, in `Kind::ALL`'s order, told apart from their neighbours.
const KIND_COLOURS: [&str; 16] = [
    "#1f7a4a", "#2b6cb0", "#b7791f", "#6b3fa0", "#c53030", "#2c7a7b", "#975a16", "#d53f8c", "#4a5568",
    "#38a169", "#3182ce", "#dd6b20", "#805ad5", "#e53e3e", "#319795", "#718096",
];

/// The colour a node of `kind` is drawn in.
pub fn colour_of(kind: &str) -> &'static str {
    let i =
        cortex_domain::Kind::ALL.iter().position(|k| k.as_str() == kind).unwrap_or(KIND_COLOURS.len() - 1);
    KIND_COLOURS[i % KIND_COLOURS.len()]
}

/// One line of the legend: a kind drawn on the page and its colour.
pub struct Key {
    pub kind: String,
    pub fill: &'static str,
}

pub struct Node {
    pub id: String,
    pub kind: String,
    pub title: String,
    /// The title cut for the drawing (the full one is the node's tooltip).
    pub label: String,
    pub ring: usize,
    pub x: f64,
    pub y: f64,
    pub fill: &'static str,
    pub radius: f64,
}

pub struct Line {
    pub x1: f64,
    pub y1: f64,
    pub x2: f64,
    pub y2: f64,
    pub mx: f64,
    pub my: f64,
    pub relation_type: String,
    pub from_title: String,
    pub to_title: String,
    pub from_id: String,
    pub to_id: String,
}

/// Places each node by its distance (in links, either way) from `center`: the center at the
/// middle, each ring's nodes evenly around it. Nodes farther than two links are left out.
pub fn layout(center: Uuid, nodes: &[(Uuid, String, String)], edges: &[GraphEdge]) -> (Vec<Node>, Vec<Line>) {
    let mut next: HashMap<Uuid, Vec<Uuid>> = HashMap::new();
    for e in edges {
        next.entry(e.from).or_default().push(e.to);
        next.entry(e.to).or_default().push(e.from);
    }
    let mut ring: HashMap<Uuid, usize> = HashMap::from([(center, 0)]);
    let mut queue = VecDeque::from([center]);
    while let Some(id) = queue.pop_front() {
        let d = ring[&id];
        for other in next.get(&id).into_iter().flatten() {
            if d < 2 && !ring.contains_key(other) {
                ring.insert(*other, d + 1);
                queue.push_back(*other);
            }
        }
    }
    let mut placed = Vec::new();
    for (r, radius) in RING.iter().enumerate() {
        let on_ring: Vec<&(Uuid, String, String)> =
            nodes.iter().filter(|(id, _, _)| ring.get(id) == Some(&r)).collect();
        let count = on_ring.len().max(1) as f64;
        for (i, (id, kind, title)) in on_ring.into_iter().enumerate() {
            // Outer rings start half a step round, so their nodes fall between the inner ones.
            let angle = TAU * (i as f64 + 0.5 * (r % 2) as f64) / count - TAU / 4.0;
            let label = if title.chars().count() > 28 {
                format!("{}…", title.chars().take(27).collect::<String>())
            } else {
                title.clone()
            };
            placed.push(Node {
                id: id.to_string(),
                kind: kind.clone(),
                title: title.clone(),
                label,
                ring: r,
                fill: colour_of(kind),
                radius: RADIUS[r.min(1)],
                x: (SIZE / 2.0 + radius * angle.cos()).round(),
                y: (SIZE / 2.0 + radius * angle.sin()).round(),
            });
        }
    }
    let at: HashMap<String, &Node> = placed.iter().map(|n| (n.id.clone(), n)).collect();
    let lines = edges
        .iter()
        .filter_map(|e| {
            let (a, b) = (at.get(&e.from.to_string())?, at.get(&e.to.to_string())?);
            // The arrow ends where it meets the node it points to or that node's name, not
            // under either.
            let length = ((b.x - a.x).powi(2) + (b.y - a.y).powi(2)).sqrt().max(1.0);
            let mut back = b.radius + 3.0;
            while back < length
                && under_node(b, b.x - (b.x - a.x) * back / length, b.y - (b.y - a.y) * back / length)
            {
                back += 1.0;
            }
            let (x2, y2) = (b.x - (b.x - a.x) * back / length, b.y - (b.y - a.y) * back / length);
            let (mx, my) = label_anchor((a.x, a.y), (x2, y2));
            Some(Line {
                x1: a.x,
                y1: a.y,
                x2: x2.round(),
                y2: y2.round(),
                mx: mx.round(),
                my: my.round(),
                relation_type: e.relation_type.clone(),
                from_title: a.title.clone(),
                to_title: b.title.clone(),
                from_id: a.id.clone(),
                to_id: b.id.clone(),
            })
        })
        .collect();
    (placed, lines)
}

/// Where a node's name is drawn below it (the baseline), and its font's size: `style.css`'s
/// `.node-label`.
const NAME_BELOW: f64 = 24.0;
const NAME_FONT: f64 = 12.0;

/// Whether a point lies on a node's circle or its name (with 3 px to spare), the name's
/// width reckoned at 0.6 em a character.
fn under_node(n: &Node, x: f64, y: f64) -> bool {
    let on_circle = (x - n.x).powi(2) + (y - n.y).powi(2) <= (n.radius + 3.0).powi(2);
    let half_width = 0.3 * NAME_FONT * n.label.chars().count() as f64 + 3.0;
    let on_name = (x - n.x).abs() <= half_width
        && y >= n.y + NAME_BELOW - NAME_FONT - 3.0
        && y <= n.y + NAME_BELOW + 0.3 * NAME_FONT + 3.0;
    on_circle || on_name
}

/// How far beside its line a relation's name sits.
const LABEL_OFFSET: f64 = 8.0;

/// Where a relation's name goes: two fifths of the way along its line, away from the
/// arrowhead at the far end, and beside the line (on its upper side; left of a vertical one),
/// so neither the name nor the arrow hides the other.
fn label_anchor(from: (f64, f64), to: (f64, f64)) -> (f64, f64) {
    let (dx, dy) = (to.0 - from.0, to.1 - from.1);
    let length = (dx * dx + dy * dy).sqrt().max(1.0);
    // The normal pointing up the page (or left, when the line is vertical).
    let (mut nx, mut ny) = (dy / length, -dx / length);
    if ny > 0.0 || (ny == 0.0 && nx > 0.0) {
        (nx, ny) = (-nx, -ny);
    }
    (from.0 + 0.4 * dx + LABEL_OFFSET * nx, from.1 + 0.4 * dy + LABEL_OFFSET * ny)
}

#[derive(Template)]
#[template(path = "ui/graph.html")]
struct GraphPage {
    chrome: Option<Chrome>,
    id: String,
    title: String,
    depth: u8,
    size: f64,
    nodes: Vec<Node>,
    lines: Vec<Line>,
    legend: Vec<Key>,
}

pub async fn page(State(ui): State<Ui>, headers: HeaderMap, Path(id): Path<String>, uri: Uri) -> Response {
    let viewer = match viewer(&ui, &headers).await {
        Ok(v) => v,
        Err(answer) => return answer,
    };
    let Ok(uuid) = Uuid::parse_str(&id) else { return viewer.answer(not_found(&viewer)) };
    let depth: u8 = if uri.query().is_some_and(|q| q.split('&').any(|p| p == "depth=2")) { 2 } else { 1 };
    let service = ui.app.service.for_caller(&viewer.principal.caller);
    let request = FindRequest::ids([uuid])
        .with_expand(Expand::All)
        .with_depth(depth)
        .with_expand_limit(MAX_NODES)
        .with_detail(Detail::Brief);
    let found = tokio::task::spawn_blocking(move || service.memory_find().find(&request)).await;
    let response = match found {
        Ok(Ok(response)) => response,
        Ok(Err(e)) => return failed(&viewer, e.to_string()),
        Err(e) => return failed(&viewer, e.to_string()),
    };
    let Some(title) = response.hits.iter().find(|h| h.id == uuid).map(|h| h.title.clone()) else {
        return viewer.answer(not_found(&viewer));
    };
    let (nodes, lines) = drawing(uuid, &response);
    let legend = legend(&nodes);
    let page = GraphPage {
        chrome: Some(viewer.chrome()),
        id: uuid.to_string(),
        title,
        depth,
        size: SIZE,
        nodes,
        lines,
        legend,
    };
    viewer.answer(page::html(StatusCode::OK, &page))
}

fn drawing(center: Uuid, response: &FindResponse) -> (Vec<Node>, Vec<Line>) {
    let mut nodes: Vec<(Uuid, String, String)> =
        response.hits.iter().map(|h| (h.id, h.kind.as_str().to_string(), h.title.clone())).collect();
    let edges = match &response.graph {
        Some(graph) => {
            for n in &graph.nodes {
                if !nodes.iter().any(|(id, _, _)| *id == n.id) {
                    nodes.push((n.id, n.kind.as_str().to_string(), n.title.clone()));
                }
            }
            graph.edges.clone()
        }
        None => Vec::new(),
    };
    layout(center, &nodes, &edges)
}

/// The kinds drawn, in the order they first appear.
fn legend(nodes: &[Node]) -> Vec<Key> {
    let mut keys: Vec<Key> = Vec::new();
    for n in nodes {
        if !keys.iter().any(|k| k.kind == n.kind) {
            keys.push(Key { kind: n.kind.clone(), fill: n.fill });
        }
    }
    keys
}

fn failed(viewer: &Viewer, e: String) -> Response {
    page::server_error("the graph page", e, Some(viewer.chrome()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge(from: Uuid, to: Uuid) -> GraphEdge {
        GraphEdge { id: Uuid::now_v7(), from, to, relation_type: "calls".into() }
    }

    #[test]
    fn nodes_sit_on_the_ring_of_their_distance() {
        let ids: Vec<Uuid> = (0..5).map(|_| Uuid::now_v7()).collect();
        let nodes: Vec<(Uuid, String, String)> =
            ids.iter().map(|id| (*id, "entity".to_string(), format!("node {id}"))).collect();
        // 0 → 1, 2 → 0, 1 → 3; 4 is linked to nothing shown.
        let edges = vec![edge(ids[0], ids[1]), edge(ids[2], ids[0]), edge(ids[1], ids[3])];
        let (placed, lines) = layout(ids[0], &nodes, &edges);
        let ring = |i: usize| placed.iter().find(|n| n.id == ids[i].to_string()).map(|n| n.ring);
        assert_eq!((ring(0), ring(1), ring(2), ring(3), ring(4)), (Some(0), Some(1), Some(1), Some(2), None));
        let center = &placed[0];
        assert_eq!((center.x, center.y), (SIZE / 2.0, SIZE / 2.0));
        for n in &placed {
            let r = ((n.x - SIZE / 2.0).powi(2) + (n.y - SIZE / 2.0).powi(2)).sqrt();
            assert!((r - RING[n.ring]).abs() < 1.0, "{} at {r}", n.ring);
            assert!(n.x >= 0.0 && n.x <= SIZE && n.y >= 0.0 && n.y <= SIZE);
        }
        assert_eq!(lines.len(), 3);
        let to = placed.iter().find(|n| n.id == ids[1].to_string()).unwrap();
        let end = ((lines[0].x2 - to.x).powi(2) + (lines[0].y2 - to.y).powi(2)).sqrt();
        assert!((end - to.radius - 3.0).abs() < 1.5, "the arrow stops at the node's edge: {end}");
        // Every arrow stops short of the node it points to and of that node's name.
        for (l, e) in lines.iter().zip(&edges) {
            let target = placed.iter().find(|n| n.id == e.to.to_string()).unwrap();
            assert!(!under_node(target, l.x2, l.y2), "an arrow under {}", target.label);
        }
        assert!(under_node(center, center.x, center.y + NAME_BELOW - 4.0), "the name is below the node");
        // An arrow from straight below ends below the name.
        let (below, up) = layout(ids[0], &nodes[..2], &[edge(ids[1], ids[0])]);
        assert!(below[1].y > below[0].y && (below[1].x - below[0].x).abs() < 1.0, "placed below");
        assert!(up[0].y2 > below[0].y + NAME_BELOW + 3.0, "ends below the name: {}", up[0].y2);
        for l in &lines {
            // The name sits off the line and well before its arrowhead (10 px long).
            let (dx, dy) = (l.x2 - l.x1, l.y2 - l.y1);
            let length = (dx * dx + dy * dy).sqrt();
            let off_line = ((l.mx - l.x1) * dy - (l.my - l.y1) * dx).abs() / length;
            assert!((off_line - LABEL_OFFSET).abs() < 1.5, "{off_line}");
            let to_tip = ((l.x2 - l.mx).powi(2) + (l.y2 - l.my).powi(2)).sqrt();
            assert!(
                to_tip > 0.5 * length && to_tip > 20.0,
                "the name is clear of the arrow: {to_tip} of {length}"
            );
        }
        assert_eq!(label_anchor((0.0, 0.0), (100.0, 0.0)), (40.0, -8.0), "above a level line");
        assert_eq!(label_anchor((0.0, 100.0), (0.0, 0.0)), (-8.0, 60.0), "left of a vertical one");
        let kinds: Vec<&str> = cortex_domain::Kind::ALL.iter().map(|k| colour_of(k.as_str())).collect();
        let mut distinct = kinds.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), kinds.len(), "every kind a colour of its own");
        assert!(placed.iter().all(|n| n.label.chars().count() <= 28));
    }
}
