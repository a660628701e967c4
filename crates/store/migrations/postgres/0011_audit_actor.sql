-- Who deleted or restored an item is who asked, not who stored it: for those two operations
-- the writer's actor, tool and session (the transaction's settings) win over the item's own
-- `source`, which the write leaves as it was. The function of 0003 otherwise unchanged.
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
            CASE WHEN op IN ('delete', 'restore')
                 THEN coalesce(nullif(current_setting('cortex.actor', true), ''), r.source ->> 'actor')
                 ELSE coalesce(r.source ->> 'actor', nullif(current_setting('cortex.actor', true), '')) END,
            CASE WHEN op IN ('delete', 'restore')
                 THEN coalesce(nullif(current_setting('cortex.tool', true), ''), r.source ->> 'tool')
                 ELSE coalesce(r.source ->> 'tool', nullif(current_setting('cortex.tool', true), '')) END,
            CASE WHEN op IN ('delete', 'restore')
                 THEN coalesce(nullif(current_setting('cortex.session', true), ''), r.source ->> 'session')
                 ELSE coalesce(r.source ->> 'session', nullif(current_setting('cortex.session', true), '')) END,
            nullif(current_setting('cortex.request_id', true), ''),
            nullif(current_setting('cortex.batch_id', true), ''),
            before, after, summary);
    RETURN NULL;
END $$;

