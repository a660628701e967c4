-- The change log: one entry per insert, update and delete of an item or of its vectors, written
-- by the database itself (so `cortex import`, `cortex reindex`, purges, raw SQL and other
-- processes are all seen), read by every index kept outside the database through
-- `VectorSource::changes_since` (crates/store/src/sqlite/changes.rs). `seq` only grows
-- (AUTOINCREMENT never reuses a value) and, SQLite having one writer at a time, entries commit
-- in `seq` order: a reader's cursor is the last seq it read.
CREATE TABLE change_log (
    seq     INTEGER PRIMARY KEY AUTOINCREMENT,
    item_id TEXT    NOT NULL
);

-- The log is bounded: every 1,024th entry removes those more than 100,000 entries old. The
-- newest seq removed is kept here: a reader whose cursor is below it missed entries, and
-- reloads everything instead.
CREATE TABLE change_log_pruned (
    id  INTEGER PRIMARY KEY CHECK (id = 1),
    seq INTEGER NOT NULL
);
INSERT INTO change_log_pruned (id, seq) VALUES (1, 0);

CREATE TRIGGER change_log_prune AFTER INSERT ON change_log
WHEN NEW.seq % 1024 = 0
BEGIN
    UPDATE change_log_pruned SET seq = max(seq, NEW.seq - 100000) WHERE id = 1;
    DELETE FROM change_log WHERE seq <= NEW.seq - 100000;
END;

CREATE TRIGGER items_change_insert AFTER INSERT ON items
BEGIN
    INSERT INTO change_log (item_id) VALUES (NEW.id);
END;
CREATE TRIGGER items_change_update AFTER UPDATE ON items
BEGIN
    INSERT INTO change_log (item_id) VALUES (NEW.id);
END;
CREATE TRIGGER items_change_delete AFTER DELETE ON items
BEGIN
    INSERT INTO change_log (item_id) VALUES (OLD.id);
END;

-- Vectors are rewritten without touching their item (`cortex reindex`). When a vector row goes
-- with its item (a purge), the item is gone already and its own trigger logged it.
CREATE TRIGGER item_vectors_change_insert AFTER INSERT ON item_vectors
BEGIN
    INSERT INTO change_log (item_id) SELECT id FROM items WHERE rowid = NEW.item_rowid;
END;
CREATE TRIGGER item_vectors_change_update AFTER UPDATE ON item_vectors
BEGIN
    INSERT INTO change_log (item_id) SELECT id FROM items WHERE rowid = NEW.item_rowid;
END;
CREATE TRIGGER item_vectors_change_delete AFTER DELETE ON item_vectors
BEGIN
    INSERT INTO change_log (item_id) SELECT id FROM items WHERE rowid = OLD.item_rowid;
END;
