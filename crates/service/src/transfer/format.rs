//! The export file format, in one place: one header line `{"cortex_export": 1,
//! "embedding_model": …}`, one line per item (soft-deleted ones included, so the history moves
//! too), then the items' provenance and the git tables (`git_lines`), and one trailer line
//! `{"cortex_export_end": {"items": N, "git": M}}`. A file without its trailer
//! was cut short and is refused before anything is written ([`check_lines`]).

use super::file_error::{FileError, VectorProblem};
use cortex_domain::{Kind, Scope};
use cortex_store::{ChunkVector, ExportedItem, Record, StoredItem, WriteOp};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// The format version written in the header.
pub const FORMAT_VERSION: u32 = 1;

#[derive(Debug, Serialize, Deserialize)]
pub struct Header {
    pub cortex_export: u32,
    /// `model:dimension` of the vectors in the file, if any.
    pub embedding_model: Option<String>,
}

impl Header {
    /// The length of the file's vectors, read from `model:dimension`; `None` without a model.
    pub fn dimension(&self) -> Result<Option<usize>, FileError> {
        let Some(model) = &self.embedding_model else { return Ok(None) };
        match model.rsplit_once(':').and_then(|(_, d)| d.parse().ok()) {
            Some(dimension) => Ok(Some(dimension)),
            None => Err(FileError::ModelWithoutDimension(model.clone())),
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Trailer {
    pub cortex_export_end: TrailerCounts,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct TrailerCounts {
    pub items: u64,
    /// Lines of provenance and git tables (absent from files of builds before them).
    #[serde(default)]
    pub git: u64,
}

/// One item line: every stored field, its deletion time and its vector.
#[derive(Debug, Serialize, Deserialize)]
pub struct ItemLine {
    pub id: Uuid,
    pub kind: Kind,
    pub scope: Scope,
    pub title: String,
    pub body: String,
    pub content: Option<String>,
    pub data: Value,
    pub metadata: Option<Value>,
    pub source: Option<Value>,
    pub tags: Vec<String>,
    pub status: Option<String>,
    pub content_hash: String,
    pub idempotency_key: Option<String>,
    pub ttl: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    pub expires_at: Option<i64>,
    /// When what the item records happened (absent from files of builds before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub occurred_at: Option<i64>,
    pub deleted_at: Option<i64>,
    #[serde(default)]
    pub superseded_by: Option<Uuid>,
    /// When the item first entered a governed state (absent from files of builds before it:
    /// the importing store derives it from the item's status then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub governed_since: Option<i64>,
    /// The principal that wrote the item's current version (absent from files of builds
    /// before it, and for items whose writer was not named: the importer is recorded then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    pub vector: Option<Vec<f32>>,
    /// A long document's chunk vectors (absent from files of builds before chunking).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chunks: Vec<ChunkLine>,
}

/// One chunk vector of an item line: the byte range of the chunk and its vector.
#[derive(Debug, Serialize, Deserialize)]
pub struct ChunkLine {
    pub start: u32,
    pub end: u32,
    pub vector: Vec<f32>,
}

impl From<ExportedItem> for ItemLine {
    fn from(e: ExportedItem) -> ItemLine {
        let r = e.item.record;
        ItemLine {
            id: r.id,
            kind: r.kind,
            scope: r.scope,
            title: r.title,
            body: r.body,
            content: r.content,
            data: r.data,
            metadata: r.metadata,
            source: r.source,
            tags: r.tags,
            status: r.status,
            content_hash: r.content_hash,
            idempotency_key: r.idempotency_key,
            ttl: r.ttl,
            created_at: r.created_at,
            updated_at: r.updated_at,
            expires_at: r.expires_at,
            occurred_at: r.occurred_at,
            deleted_at: e.item.deleted_at,
            superseded_by: e.item.superseded_by,
            governed_since: e.item.governed_since,
            author: e.item.author.clone(),
            vector: e.vector,
            chunks: e
                .chunks
                .into_iter()
                .map(|c| ChunkLine { start: c.start, end: c.end, vector: c.vector })
                .collect(),
        }
    }
}

impl ItemLine {
    /// Whether the line's vectors fit a file whose vectors have `dimension` values (none when
    /// the header names no model). An export never writes a line that fails this, so a
    /// failure means the file was edited or pieced together: importing it would put vectors
    /// of the wrong length in the store, or chunk vectors without the item's own.
    pub fn check_vectors(&self, dimension: Option<usize>) -> Result<(), FileError> {
        let refused = |problem| Err(FileError::Vectors { id: self.id, problem });
        let Some(vector) = &self.vector else {
            return match self.chunks.is_empty() {
                true => Ok(()),
                false => refused(VectorProblem::ChunksWithoutVector),
            };
        };
        let Some(dimension) = dimension else { return refused(VectorProblem::NoModel) };
        if vector.len() != dimension {
            return refused(VectorProblem::Vector { found: vector.len(), dimension });
        }
        for (index, chunk) in self.chunks.iter().enumerate() {
            if chunk.vector.len() != dimension {
                return refused(VectorProblem::Chunk { index, found: chunk.vector.len(), dimension });
            }
            if chunk.start >= chunk.end {
                return refused(VectorProblem::EmptyChunk { index, start: chunk.start, end: chunk.end });
            }
        }
        Ok(())
    }

    /// The item's fields as a record (no vectors), leaving the line as it is.
    pub(crate) fn record_copy(&self) -> Record {
        Record {
            id: self.id,
            kind: self.kind,
            scope: self.scope.clone(),
            title: self.title.clone(),
            body: self.body.clone(),
            content: self.content.clone(),
            data: self.data.clone(),
            metadata: self.metadata.clone(),
            source: self.source.clone(),
            tags: self.tags.clone(),
            status: self.status.clone(),
            content_hash: self.content_hash.clone(),
            idempotency_key: self.idempotency_key.clone(),
            ttl: self.ttl.clone(),
            created_at: self.created_at,
            updated_at: self.updated_at,
            expires_at: self.expires_at,
            occurred_at: self.occurred_at,
            vector: None,
            chunks: Vec::new(),
        }
    }

    pub(super) fn into_op(self) -> WriteOp {
        let record = self.record_copy();
        WriteOp::Import {
            item: Box::new(StoredItem {
                record,
                deleted_at: self.deleted_at,
                superseded_by: self.superseded_by,
                governed_since: self.governed_since,
                author: self.author,
            }),
            vector: self.vector,
            chunks: self
                .chunks
                .into_iter()
                .map(|c| ChunkVector { start: c.start, end: c.end, vector: c.vector })
                .collect(),
        }
    }
}

/// What a line of an export file is.
#[derive(Debug)]
pub enum Line {
    Header(Header),
    Item(Box<ItemLine>),
    Git(Box<super::git_lines::GitLine>),
    Trailer(Trailer),
}

/// Reads one line of an export file; `Err` names the line's problem.
pub fn parse_line(text: &str) -> Result<Line, FileError> {
    let value: Value = serde_json::from_str(text).map_err(FileError::NotJson)?;
    if value.get("cortex_export").is_some() {
        return serde_json::from_value(value).map(Line::Header).map_err(FileError::Shape);
    }
    if value.get("cortex_export_end").is_some() {
        return serde_json::from_value(value).map(Line::Trailer).map_err(FileError::Shape);
    }
    if let Some(git) = super::git_lines::GitLine::parse(&value) {
        return git.map(|g| Line::Git(Box::new(g))).map_err(FileError::Shape);
    }
    serde_json::from_value(value).map(|item| Line::Item(Box::new(item))).map_err(FileError::Shape)
}

/// One line of the file, as written.
pub fn encode_line(value: &impl Serialize) -> Result<String, FileError> {
    serde_json::to_string(value).map_err(FileError::Encode)
}

/// The header and the trailer's item count of a whole file, given as its non-empty lines with
/// their 1-based numbers, after checking every line parses, every vector fits the header's
/// model and the count matches: a truncated or corrupt file is refused before anything is
/// written. A line that could not be read is its reader's error, passed on.
pub fn check_lines(
    lines: impl Iterator<Item = Result<(usize, String), FileError>>,
) -> Result<(Header, u64), FileError> {
    let mut header = None;
    let mut dimension = None;
    let mut trailer = None;
    let mut items = 0u64;
    let mut git = 0u64;
    for line in lines {
        let (number, line) = line?;
        if trailer.is_some() {
            return Err(FileError::AfterEnd.at(number));
        }
        match parse_line(&line).map_err(|e| e.at(number))? {
            Line::Header(h) if number == 1 => {
                if h.cortex_export != FORMAT_VERSION {
                    return Err(FileError::Version(h.cortex_export));
                }
                dimension = h.dimension()?;
                header = Some(h);
            }
            Line::Header(_) => return Err(FileError::SecondHeader.at(number)),
            Line::Item(_) | Line::Git(_) if header.is_none() => return Err(FileError::NoHeader.at(1)),
            Line::Item(item) => {
                item.check_vectors(dimension).map_err(|e| e.at(number))?;
                items += 1;
            }
            Line::Git(_) => git += 1,
            Line::Trailer(t) => trailer = Some((t.cortex_export_end.items, t.cortex_export_end.git)),
        }
    }
    let header = header.ok_or(FileError::Empty)?;
    match trailer {
        None => Err(FileError::CutShort(items)),
        Some((declared, _)) if declared != items => Err(FileError::ItemCount { declared, found: items }),
        Some((_, declared)) if declared != git => Err(FileError::GitCount { declared, found: git }),
        Some((declared, _)) => Ok((header, declared)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_told_apart_and_bad_ones_named() {
        assert!(matches!(parse_line(r#"{"cortex_export":1,"embedding_model":null}"#), Ok(Line::Header(_))));
        assert!(matches!(parse_line(r#"{"cortex_export_end":{"items":3}}"#), Ok(Line::Trailer(_))));
        assert!(parse_line("{").unwrap_err().to_string().starts_with("not JSON"));
        let missing = parse_line(r#"{"id":"0190a8e0-0000-7000-8000-000000000000"}"#).unwrap_err().to_string();
        assert!(missing.contains("missing field"), "{missing}");
    }

    fn item_line(vector: Option<Vec<f32>>, chunks: &[(u32, u32, usize)]) -> ItemLine {
        let mut line: ItemLine = serde_json::from_value(serde_json::json!({
            "id": "0190a8e0-0000-7000-8000-000000000000", "kind": "section",
            "scope": {"org": "o", "project": "p", "branch": "main"}, "title": "t", "body": "b",
            "content": null, "data": {}, "metadata": null, "source": null, "tags": [],
            "status": null, "content_hash": "h", "idempotency_key": null, "ttl": null,
            "created_at": 1, "updated_at": 1, "expires_at": null, "deleted_at": null, "vector": null
        }))
        .unwrap();
        line.vector = vector;
        line.chunks =
            chunks.iter().map(|&(start, end, n)| ChunkLine { start, end, vector: vec![0.5; n] }).collect();
        line
    }

    #[test]
    fn vectors_that_do_not_fit_the_file_are_named() {
        assert!(item_line(None, &[]).check_vectors(None).is_ok());
        assert!(item_line(None, &[]).check_vectors(Some(3)).is_ok());
        assert!(item_line(Some(vec![0.1; 3]), &[(0, 10, 3), (10, 20, 3)]).check_vectors(Some(3)).is_ok());
        let cases = [
            (item_line(None, &[(0, 10, 3)]), Some(3), "`chunks` but no `vector`"),
            (item_line(Some(vec![0.1; 3]), &[]), None, "names no embedding_model"),
            (item_line(Some(vec![0.1; 4]), &[]), Some(3), "`vector` has 4 values, the header's model has 3"),
            (
                item_line(Some(vec![0.1; 3]), &[(0, 10, 3), (10, 20, 2)]),
                Some(3),
                "`chunks[1].vector` has 2 values",
            ),
            (item_line(Some(vec![0.1; 3]), &[(10, 10, 3)]), Some(3), "`chunks[0]` is empty"),
        ];
        for (line, dimension, want) in cases {
            let err = line.check_vectors(dimension).unwrap_err().to_string();
            assert!(err.contains(want), "{err}");
        }
    }

    #[test]
    fn the_header_gives_the_dimension_of_its_model() {
        let header =
            |model: Option<&str>| Header { cortex_export: 1, embedding_model: model.map(str::to_string) };
        assert_eq!(header(None).dimension().unwrap(), None);
        assert_eq!(
            header(Some("sentence-transformers/all-MiniLM-L6-v2:384")).dimension().unwrap(),
            Some(384)
        );
        assert_eq!(header(Some("openai:text-embedding-3-small:1536")).dimension().unwrap(), Some(1536));
        assert!(header(Some("no-dimension")).dimension().unwrap_err().to_string().contains(":<dimension>"));
    }
}
