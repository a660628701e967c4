-- The change log: one entry per insert, update and delete of an item or of its chunk vectors
-- (an item's own vector is a column of `items`), written by the database itself, read by every
-- index kept outside the database through `VectorSource::changes_since`
-- (crates/store/src/postgres/changes.rs).
--
-- Sequence values are taken when a row is written, not when its transaction commits: a
-- transaction that took seq 5 may commit after one that took seq 6 was read. So each entry
-- also records its transaction (`txn`, from pg_current_xact_id()), and readers go in
-- (txn, seq) order and never move their cursor past the oldest transaction still running
-- (the snapshot's xmin): what such a transaction writes shows up above the cursor whenever it
-- commits.
CREATE TABLE change_log (
    seq     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    txn     bigint NOT NULL DEFAULT pg_current_xact_id()::text::bigint,
    item_id uuid   NOT NULL
);
CREATE INDEX change_log_order ON change_log (txn, seq);

-- The log is bounded: every 1,024th entry removes those more than 100,000 entries old. The
-- greatest (txn, seq) removed is kept here: a reader whose cursor is below it missed entries,
-- and reloads everything instead.
CREATE TABLE change_log_pruned (
    id  integer PRIMARY KEY CHECK (id = 1),
    txn bigint  NOT NULL,
    seq bigint  NOT NULL
);
INSERT INTO change_log_pruned (id, txn, seq) VALUES (1, 0, 0);

CREATE FUNCTION change_log_prune() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    newest record;
BEGIN
    -- One pruner at a time (an arbitrary fixed key); the others leave it to it.
    IF NOT pg_try_advisory_xact_lock(109330312751207) THEN
        RETURN NULL;
    END IF;
    WITH gone AS (DELETE FROM change_log WHERE seq <= NEW.seq - 100000 RETURNING txn, seq)
    SELECT txn, seq INTO newest FROM gone ORDER BY txn DESC, seq DESC LIMIT 1;
    IF newest.seq IS NOT NULL THEN
        UPDATE change_log_pruned p SET txn = newest.txn, seq = newest.seq
        WHERE p.id = 1 AND (p.txn, p.seq) < (newest.txn, newest.seq);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER change_log_prune AFTER INSERT ON change_log
    FOR EACH ROW WHEN (NEW.seq % 1024 = 0) EXECUTE FUNCTION change_log_prune();

CREATE FUNCTION change_log_item() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO change_log (item_id) VALUES (OLD.id);
    ELSE
        INSERT INTO change_log (item_id) VALUES (NEW.id);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER items_change AFTER INSERT OR UPDATE OR DELETE ON items
    FOR EACH ROW EXECUTE FUNCTION change_log_item();

-- Chunk vectors are replaced without touching their item (`cortex reindex`): one entry per
-- statement and item, not per chunk.
CREATE FUNCTION change_log_chunks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO change_log (item_id) SELECT DISTINCT item_id FROM changed_chunks;
    RETURN NULL;
END $$;
CREATE TRIGGER item_chunks_change_insert AFTER INSERT ON item_chunks
    REFERENCING NEW TABLE AS changed_chunks FOR EACH STATEMENT EXECUTE FUNCTION change_log_chunks();
CREATE TRIGGER item_chunks_change_update AFTER UPDATE ON item_chunks
    REFERENCING NEW TABLE AS changed_chunks FOR EACH STATEMENT EXECUTE FUNCTION change_log_chunks();
CREATE TRIGGER item_chunks_change_delete AFTER DELETE ON item_chunks
    REFERENCING OLD TABLE AS changed_chunks FOR EACH STATEMENT EXECUTE FUNCTION change_log_chunks();
