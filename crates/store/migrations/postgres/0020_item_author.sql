-- Who wrote each item's current version, as the server established it (the principal's text,
-- crates/domain/src/principal.rs): a find filters on it (`author`). Written with each insert
-- and update from the writer's context, never from the item; an import keeps the author the
-- export carried. Items written before take the principal of the latest insert, import or
-- update their audit trail records (none, when the trail names none). `updated_at` is kept as
-- it was: the touch trigger stays out of the backfill.
ALTER TABLE items ADD COLUMN author text;

ALTER TABLE items DISABLE TRIGGER items_touch;
UPDATE items i SET author = (
    SELECT a.principal FROM audit_log a
    WHERE a.item_id = i.id AND a.operation IN ('insert', 'import', 'update')
    ORDER BY a.seq DESC LIMIT 1
);
ALTER TABLE items ENABLE TRIGGER items_touch;

CREATE INDEX items_author ON items (author) WHERE author IS NOT NULL;
