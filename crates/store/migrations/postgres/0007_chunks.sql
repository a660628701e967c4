-- Embeddings of the chunks of a long item's text (`cortex_domain::chunking`), beside the item's
-- own `embedding`. Derived data, like it: not audited, replaced whole whenever the item's
-- vectors are. One partial HNSW index per dimension, made with the items' own
-- (`write::vector_index_sql`).
CREATE TABLE item_chunks (
    item_id    uuid    NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    start_byte integer NOT NULL,
    end_byte   integer NOT NULL,
    embedding  vector  NOT NULL,
    PRIMARY KEY (item_id, start_byte)
);
