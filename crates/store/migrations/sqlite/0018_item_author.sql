-- Who wrote each item's current version, as the server established it (the principal's text,
-- crates/domain/src/principal.rs): a find filters on it (`author`). Written with each insert
-- and update from the writer's context, never from the item; an import keeps the author the
-- export carried. Items written before take the principal of the latest insert, import or
-- update their audit trail records (none, when the trail names none). `updated_at` is kept as
-- it was: the touch trigger stays out of the backfill.
ALTER TABLE items ADD COLUMN author TEXT;

DROP TRIGGER items_touch;
UPDATE items SET author = (
    SELECT a.principal FROM audit_log a
    WHERE a.item_id = items.id AND a.operation IN ('insert', 'import', 'update')
    ORDER BY a.seq DESC LIMIT 1
);
CREATE TRIGGER items_touch AFTER UPDATE ON items
WHEN NEW.updated_at = OLD.updated_at
BEGIN
    UPDATE items SET updated_at = CAST(unixepoch('subsec') * 1000 AS INTEGER) WHERE rowid = NEW.rowid;
END;

CREATE INDEX items_author ON items (author) WHERE author IS NOT NULL;
