-- Embeddings of the chunks of a long item's text, beside the item's own vector: one blob per
-- item (see `row::chunks_to_blob`), read and written with the item's vector, never alone.
ALTER TABLE item_vectors ADD COLUMN chunks BLOB;
