-- The item that replaced this one (`supersedes` on the newer item). A superseded item stays
-- readable by id but leaves finds unless they ask for superseded items.
ALTER TABLE items ADD COLUMN superseded_by uuid;

-- The audit trigger of 0002, now also recording a supersede (one record, operation
-- `supersede`, even though a decision's status and data change with it).
CREATE OR REPLACE FUNCTION items_audit() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r items;
    op text;
    summary text;
    before text;
    after text;
BEGIN
    IF TG_OP = 'INSERT' THEN
        r := NEW;
        op := coalesce(nullif(current_setting('cortex.insert_as', true), ''), 'insert');
        summary := op || 'ed ' || NEW.kind;
        after := NEW.content_hash;
    ELSIF TG_OP = 'DELETE' THEN
        r := OLD;
        op := 'purge';
        summary := 'purged ' || OLD.kind || ' (removed for good)';
        before := OLD.content_hash;
    ELSE
        r := NEW;
        before := OLD.content_hash;
        after := NEW.content_hash;
        IF OLD.superseded_by IS NULL AND NEW.superseded_by IS NOT NULL THEN
            op := 'supersede';
            summary := 'superseded by ' || NEW.superseded_by;
        ELSIF OLD.deleted_at IS NULL AND NEW.deleted_at IS NOT NULL THEN
            op := 'delete';
            summary := 'deleted ' || NEW.kind;
        ELSIF OLD.deleted_at IS NOT NULL AND NEW.deleted_at IS NULL THEN
            op := 'restore';
            summary := 'restored ' || NEW.kind;
        ELSE
            op := 'update';
            summary := 'changed ' || items_changed_fields(OLD, NEW);
        END IF;
    END IF;
    INSERT INTO audit_log (at, operation, item_id, kind, org, project, branch, service, sprint,
                           tenant, environment, actor, tool, session, request_id, batch_id,
                           hash_before, hash_after, summary)
    VALUES ((extract(epoch FROM clock_timestamp()) * 1000)::bigint, op, r.id, r.kind, r.org,
            r.project, r.branch, r.service, r.sprint, r.tenant, r.environment,
            coalesce(r.source ->> 'actor', nullif(current_setting('cortex.actor', true), '')),
            coalesce(r.source ->> 'tool', nullif(current_setting('cortex.tool', true), '')),
            coalesce(r.source ->> 'session', nullif(current_setting('cortex.session', true), '')),
            nullif(current_setting('cortex.request_id', true), ''),
            nullif(current_setting('cortex.batch_id', true), ''),
            before, after, summary);
    RETURN NULL;
END $$;

DROP TRIGGER items_audit_update ON items;
CREATE TRIGGER items_audit_update AFTER UPDATE OF kind, org, project, branch, service, sprint,
    tenant, environment, title, body, content, data, metadata, source, tags, status,
    content_hash, ttl, expires_at, deleted_at, superseded_by ON items
    FOR EACH ROW EXECUTE FUNCTION items_audit();
