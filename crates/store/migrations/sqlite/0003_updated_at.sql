-- `updated_at` is kept by the database, not only by the Rust code: an UPDATE that leaves it
-- unchanged (raw SQL, a tool, a forgotten column) still moves it to now, in milliseconds.
-- Recursive triggers are off, so the inner UPDATE does not fire this trigger again.
CREATE TRIGGER items_touch AFTER UPDATE ON items
WHEN NEW.updated_at = OLD.updated_at
BEGIN
    UPDATE items SET updated_at = CAST(unixepoch('subsec') * 1000 AS INTEGER) WHERE rowid = NEW.rowid;
END;
