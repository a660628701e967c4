-- The audit trail: one record per change to an item, written by the database itself (so raw
-- SQL is audited too), and append-only (UPDATE and DELETE on it fail, whoever asks).
-- The writer says who and which request through the one-row `audit_context`, which it fills
-- at the start of its write transaction and clears before committing (SQLite has one writer
-- at a time); the item's own `source` (actor, tool, session) wins over it.
CREATE TABLE audit_log (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    at          INTEGER NOT NULL,
    operation   TEXT    NOT NULL,  -- insert | import | update | delete | restore | purge
    item_id     TEXT,
    kind        TEXT,
    org         TEXT    NOT NULL DEFAULT '',
    project     TEXT    NOT NULL DEFAULT '',
    branch      TEXT    NOT NULL DEFAULT '',
    service     TEXT    NOT NULL DEFAULT '',
    sprint      TEXT    NOT NULL DEFAULT '',
    tenant      TEXT    NOT NULL DEFAULT '',
    environment TEXT    NOT NULL DEFAULT '',
    actor       TEXT,
    tool        TEXT,
    session     TEXT,
    request_id  TEXT,
    batch_id    TEXT,
    hash_before TEXT,
    hash_after  TEXT,
    summary     TEXT    NOT NULL
);
CREATE INDEX audit_log_item ON audit_log (item_id, seq);
CREATE INDEX audit_log_at ON audit_log (at);

CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit records are append-only: UPDATE on audit_log is not allowed');
END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit records are append-only: DELETE on audit_log is not allowed');
END;

CREATE TABLE audit_context (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    request_id TEXT,
    batch_id   TEXT,
    actor      TEXT,
    tool       TEXT,
    session    TEXT,
    insert_as  TEXT
);
INSERT INTO audit_context (id) VALUES (1);

CREATE TRIGGER items_audit_insert AFTER INSERT ON items
BEGIN
    INSERT INTO audit_log (at, operation, item_id, kind, org, project, branch, service, sprint,
                           tenant, environment, actor, tool, session, request_id, batch_id,
                           hash_before, hash_after, summary)
    SELECT CAST(unixepoch('subsec') * 1000 AS INTEGER), coalesce(c.insert_as, 'insert'), NEW.id,
           NEW.kind, NEW.org, NEW.project, NEW.branch, NEW.service, NEW.sprint, NEW.tenant,
           NEW.environment,
           coalesce(json_extract(NEW.source, '$.actor'), c.actor),
           coalesce(json_extract(NEW.source, '$.tool'), c.tool),
           coalesce(json_extract(NEW.source, '$.session'), c.session),
           c.request_id, c.batch_id, NULL, NEW.content_hash,
           coalesce(c.insert_as, 'insert') || 'ed ' || NEW.kind
    FROM audit_context c WHERE c.id = 1;
END;

-- Only changes to what an item says or where it lives are audited: `UPDATE OF` leaves out
-- the touch of `updated_at` alone (0003) and vectors (another table).
CREATE TRIGGER items_audit_update AFTER UPDATE OF kind, org, project, branch, service, sprint,
    tenant, environment, title, body, content, data, metadata, source, tags, status,
    content_hash, ttl, expires_at, deleted_at ON items
BEGIN
    INSERT INTO audit_log (at, operation, item_id, kind, org, project, branch, service, sprint,
                           tenant, environment, actor, tool, session, request_id, batch_id,
                           hash_before, hash_after, summary)
    SELECT CAST(unixepoch('subsec') * 1000 AS INTEGER), op, NEW.id, NEW.kind, NEW.org,
           NEW.project, NEW.branch, NEW.service, NEW.sprint, NEW.tenant, NEW.environment,
           coalesce(json_extract(NEW.source, '$.actor'), c.actor),
           coalesce(json_extract(NEW.source, '$.tool'), c.tool),
           coalesce(json_extract(NEW.source, '$.session'), c.session),
           c.request_id, c.batch_id, OLD.content_hash, NEW.content_hash,
           CASE op
               WHEN 'update' THEN 'changed ' || coalesce(nullif(concat_ws(', ',
                   CASE WHEN NEW.title IS NOT OLD.title THEN 'title' END,
                   CASE WHEN NEW.body IS NOT OLD.body THEN 'body' END,
                   CASE WHEN NEW.data IS NOT OLD.data THEN 'data' END,
                   CASE WHEN NEW.status IS NOT OLD.status THEN 'status' END,
                   CASE WHEN NEW.tags IS NOT OLD.tags THEN 'tags' END,
                   CASE WHEN NEW.org IS NOT OLD.org OR NEW.project IS NOT OLD.project
                          OR NEW.branch IS NOT OLD.branch OR NEW.service IS NOT OLD.service
                          OR NEW.sprint IS NOT OLD.sprint OR NEW.tenant IS NOT OLD.tenant
                          OR NEW.environment IS NOT OLD.environment THEN 'scope' END,
                   CASE WHEN NEW.metadata IS NOT OLD.metadata THEN 'metadata' END,
                   CASE WHEN NEW.expires_at IS NOT OLD.expires_at THEN 'expires_at' END
               ), ''), 'no field')
               ELSE op || 'd ' || NEW.kind
           END
    FROM audit_context c,
         (SELECT CASE
                     WHEN OLD.deleted_at IS NULL AND NEW.deleted_at IS NOT NULL THEN 'delete'
                     WHEN OLD.deleted_at IS NOT NULL AND NEW.deleted_at IS NULL THEN 'restore'
                     ELSE 'update'
                 END AS op)
    WHERE c.id = 1;
END;

CREATE TRIGGER items_audit_delete AFTER DELETE ON items
BEGIN
    INSERT INTO audit_log (at, operation, item_id, kind, org, project, branch, service, sprint,
                           tenant, environment, actor, tool, session, request_id, batch_id,
                           hash_before, hash_after, summary)
    SELECT CAST(unixepoch('subsec') * 1000 AS INTEGER), 'purge', OLD.id, OLD.kind, OLD.org,
           OLD.project, OLD.branch, OLD.service, OLD.sprint, OLD.tenant, OLD.environment,
           c.actor, c.tool, c.session, c.request_id, c.batch_id, OLD.content_hash, NULL,
           'purged ' || OLD.kind || ' (removed for good)'
    FROM audit_context c WHERE c.id = 1;
END;
