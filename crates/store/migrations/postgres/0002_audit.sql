-- The audit trail: one record per change to an item, written by the database itself (so raw
-- SQL is audited too), and append-only (UPDATE, DELETE and TRUNCATE on it fail, whoever asks).
-- The writer says who and which request through transaction settings (`SET LOCAL cortex.*`);
-- the item's own `source` (actor, tool, session) wins over them.
CREATE TABLE audit_log (
    seq         bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          bigint  NOT NULL,
    operation   text    NOT NULL,  -- insert | import | update | delete | restore | purge
    item_id     uuid,
    kind        text,
    org         text    NOT NULL DEFAULT '',
    project     text    NOT NULL DEFAULT '',
    branch      text    NOT NULL DEFAULT '',
    service     text    NOT NULL DEFAULT '',
    sprint      text    NOT NULL DEFAULT '',
    tenant      text    NOT NULL DEFAULT '',
    environment text    NOT NULL DEFAULT '',
    actor       text,
    tool        text,
    session     text,
    request_id  text,
    batch_id    text,
    hash_before text,
    hash_after  text,
    summary     text    NOT NULL
);
CREATE INDEX audit_log_item ON audit_log (item_id, seq);
CREATE INDEX audit_log_at ON audit_log (at);

CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit records are append-only: % on audit_log is not allowed', TG_OP
        USING ERRCODE = 'insufficient_privilege',
              HINT = 'the audit trail is evidence; record a correction as a new change instead';
END $$;
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();

-- What changed between two versions of an item, named by field.
CREATE FUNCTION items_changed_fields(o items, n items) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(nullif(concat_ws(', ',
        CASE WHEN n.title IS DISTINCT FROM o.title THEN 'title' END,
        CASE WHEN n.body IS DISTINCT FROM o.body THEN 'body' END,
        CASE WHEN n.data IS DISTINCT FROM o.data THEN 'data' END,
        CASE WHEN n.status IS DISTINCT FROM o.status THEN 'status' END,
        CASE WHEN n.tags IS DISTINCT FROM o.tags THEN 'tags' END,
        CASE WHEN (n.org, n.project, n.branch, n.service, n.sprint, n.tenant, n.environment)
                  IS DISTINCT FROM (o.org, o.project, o.branch, o.service, o.sprint, o.tenant, o.environment)
             THEN 'scope' END,
        CASE WHEN n.metadata IS DISTINCT FROM o.metadata THEN 'metadata' END,
        CASE WHEN n.expires_at IS DISTINCT FROM o.expires_at THEN 'expires_at' END
    ), ''), 'no field')
$$;

CREATE FUNCTION items_audit() RETURNS trigger LANGUAGE plpgsql AS $$
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
        IF OLD.deleted_at IS NULL AND NEW.deleted_at IS NOT NULL THEN
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
-- Only changes to what an item says or where it lives are audited; the touch of `updated_at`
-- alone, or a new embedding, is not a change of knowledge.
CREATE TRIGGER items_audit_insert AFTER INSERT OR DELETE ON items
    FOR EACH ROW EXECUTE FUNCTION items_audit();
CREATE TRIGGER items_audit_update AFTER UPDATE OF kind, org, project, branch, service, sprint,
    tenant, environment, title, body, content, data, metadata, source, tags, status,
    content_hash, ttl, expires_at, deleted_at ON items
    FOR EACH ROW EXECUTE FUNCTION items_audit();
