-- Embeddings next to their items: little-endian f32, one row per embedded item.
CREATE TABLE item_vectors (
    item_rowid INTEGER PRIMARY KEY REFERENCES items (rowid) ON DELETE CASCADE,
    vector     BLOB NOT NULL
);

-- Facts about the store itself, such as which embedding model its vectors came from.
CREATE TABLE store_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
