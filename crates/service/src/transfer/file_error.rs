//! What is wrong with an export file, as `cortex import` says it: the line where there is one,
//! and what to do (export again: an export never writes what these refuse, so a refused file
//! was cut short, edited or pieced together).

use super::format::FORMAT_VERSION;
use thiserror::Error;
use uuid::Uuid;

#[derive(Debug, Error)]
pub enum FileError {
    #[error("line {number}: {problem}")]
    AtLine { number: usize, problem: Box<FileError> },
    #[error("{file}, line {number}: cannot be read: {source}")]
    Unreadable { file: String, number: usize, source: std::io::Error },
    #[error("not JSON: {0}")]
    NotJson(serde_json::Error),
    /// A line that is JSON but not the shape of any line of the format.
    #[error("{0}")]
    Shape(serde_json::Error),
    #[error("cannot encode a line: {0}")]
    Encode(serde_json::Error),
    #[error("the file is export format {0}, this cortex reads format {FORMAT_VERSION}")]
    Version(u32),
    #[error("the header's embedding_model {0:?} does not end in :<dimension>; export again")]
    ModelWithoutDimension(String),
    #[error("not a cortex export header (export files start with {{\"cortex_export\": 1, …}})")]
    NoHeader,
    #[error("a second header")]
    SecondHeader,
    #[error("text after the end line")]
    AfterEnd,
    #[error("the file is empty: not a cortex export")]
    Empty,
    #[error("the file ends after {0} items without its end line: it was cut short; export again")]
    CutShort(u64),
    #[error("the end line says {declared} items, but the file holds {found}: export again")]
    ItemCount { declared: u64, found: u64 },
    #[error(
        "the end line says {declared} lines of provenance and git tables, but the file holds {found}: export again"
    )]
    GitCount { declared: u64, found: u64 },
    #[error(
        "the file holds vectors of {file}, but this store's vectors come from {store}: import into an empty store instead"
    )]
    OtherModel { file: String, store: String },
    #[error("item {id}: {problem}; export again")]
    Vectors { id: Uuid, problem: VectorProblem },
}

impl FileError {
    /// This problem, found on line `number`.
    pub fn at(self, number: usize) -> FileError {
        FileError::AtLine { number, problem: Box::new(self) }
    }
}

/// Why an item's vectors do not fit the file.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum VectorProblem {
    #[error("it has `chunks` but no `vector`: a document's chunk vectors come with its own")]
    ChunksWithoutVector,
    #[error("it has a vector but the header names no embedding_model")]
    NoModel,
    #[error("`vector` has {found} values, the header's model has {dimension}")]
    Vector { found: usize, dimension: usize },
    #[error("`chunks[{index}].vector` has {found} values, the header's model has {dimension}")]
    Chunk { index: usize, found: usize, dimension: usize },
    #[error("`chunks[{index}]` is empty ({start}..{end})")]
    EmptyChunk { index: usize, start: u32, end: u32 },
}
