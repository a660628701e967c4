-- The audit trail becomes a hash chain (crates/store/src/audit_chain.rs), and auditing can no
-- longer be switched off or bypassed with DML:
-- * every record carries `prev_hash` (the hash of the record before it) and `hash`, computed
--   by `cortex_audit_hash`, an SQL function the Cortex binary registers on its connections;
-- * `audit_log` accepts only the next record of the chain: seq one past the newest, prev_hash
--   the newest hash, hash correct. `INSERT OR REPLACE` of an old seq, a forged row, a row
--   without a hash: all refused. Writers append through the view `audit_append`, which fills
--   those three columns;
-- * the one-row `audit_context` cannot be deleted, and an item change without it fails.

ALTER TABLE audit_log ADD COLUMN prev_hash TEXT;
ALTER TABLE audit_log ADD COLUMN hash TEXT;

-- Seal the records written so far, oldest first, each after the one before.
DROP TRIGGER audit_log_no_update;
WITH RECURSIVE chain (seq, prev_hash, hash) AS (
    SELECT 0, NULL, '0000000000000000000000000000000000000000000000000000000000000000'
    UNION ALL
    SELECT a.seq, c.hash,
           cortex_audit_hash(c.hash, a.seq, a.at, a.operation, a.item_id, a.kind, a.org, a.project,
                             a.branch, a.service, a.sprint, a.tenant, a.environment, a.actor,
                             a.tool, a.session, a.request_id, a.batch_id, a.hash_before,
                             a.hash_after, a.summary)
    FROM chain c JOIN audit_log a ON a.seq = (SELECT min(seq) FROM audit_log WHERE seq > c.seq)
)
UPDATE audit_log SET prev_hash = chain.prev_hash, hash = chain.hash
FROM chain WHERE chain.seq = audit_log.seq;

CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit records are append-only: UPDATE on audit_log is not allowed');
END;

CREATE TRIGGER audit_log_chained BEFORE INSERT ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit records are append-only and chained: insert through audit_append, which writes the next record of the chain')
    WHERE NEW.seq IS NOT (SELECT coalesce(max(seq), 0) + 1 FROM audit_log)
       OR NEW.prev_hash IS NOT coalesce((SELECT hash FROM audit_log ORDER BY seq DESC LIMIT 1),
                                        '0000000000000000000000000000000000000000000000000000000000000000')
       OR NEW.hash IS NOT cortex_audit_hash(NEW.prev_hash, NEW.seq, NEW.at, NEW.operation,
                                            NEW.item_id, NEW.kind, NEW.org, NEW.project,
                                            NEW.branch, NEW.service, NEW.sprint, NEW.tenant,
                                            NEW.environment, NEW.actor, NEW.tool, NEW.session,
                                            NEW.request_id, NEW.batch_id, NEW.hash_before,
                                            NEW.hash_after, NEW.summary);
END;

-- The way in: a record's fields, without seq or hashes.
CREATE VIEW audit_append AS
    SELECT at, operation, item_id, kind, org, project, branch, service, sprint, tenant,
           environment, actor, tool, session, request_id, batch_id, hash_before, hash_after,
           summary
    FROM audit_log WHERE 0;

CREATE TRIGGER audit_append_insert INSTEAD OF INSERT ON audit_append
BEGIN
    INSERT INTO audit_log (seq, at, operation, item_id, kind, org, project, branch, service,
                           sprint, tenant, environment, actor, tool, session, request_id,
                           batch_id, hash_before, hash_after, summary, prev_hash, hash)
    SELECT h.seq, NEW.at, NEW.operation, NEW.item_id, NEW.kind, coalesce(NEW.org, ''),
           coalesce(NEW.project, ''), coalesce(NEW.branch, ''), coalesce(NEW.service, ''),
           coalesce(NEW.sprint, ''), coalesce(NEW.tenant, ''), coalesce(NEW.environment, ''),
           NEW.actor, NEW.tool, NEW.session, NEW.request_id, NEW.batch_id, NEW.hash_before,
           NEW.hash_after, NEW.summary, h.prev,
           cortex_audit_hash(h.prev, h.seq, NEW.at, NEW.operation, NEW.item_id, NEW.kind,
                             coalesce(NEW.org, ''), coalesce(NEW.project, ''),
                             coalesce(NEW.branch, ''), coalesce(NEW.service, ''),
                             coalesce(NEW.sprint, ''), coalesce(NEW.tenant, ''),
                             coalesce(NEW.environment, ''), NEW.actor, NEW.tool, NEW.session,
                             NEW.request_id, NEW.batch_id, NEW.hash_before, NEW.hash_after,
                             NEW.summary)
    FROM (SELECT coalesce(max(seq), 0) + 1 AS seq,
                 coalesce((SELECT hash FROM audit_log ORDER BY seq DESC LIMIT 1),
                          '0000000000000000000000000000000000000000000000000000000000000000') AS prev
          FROM audit_log) h;
END;

CREATE TRIGGER audit_context_no_delete BEFORE DELETE ON audit_context
BEGIN
    SELECT RAISE(ABORT, 'audit_context is the audit trail''s one-row context: it cannot be deleted');
END;

-- The item triggers of 0004/0005, now appending through audit_append, and failing when the
-- context row is missing (it cannot be deleted, but a dropped trigger could let it go).
DROP TRIGGER items_audit_insert;
DROP TRIGGER items_audit_update;
DROP TRIGGER items_audit_delete;

CREATE TRIGGER items_audit_insert AFTER INSERT ON items
BEGIN
    SELECT RAISE(ABORT, 'audit_context is missing: item changes cannot be audited, so they are refused')
    WHERE NOT EXISTS (SELECT 1 FROM audit_context WHERE id = 1);
    INSERT INTO audit_append (at, operation, item_id, kind, org, project, branch, service, sprint,
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

CREATE TRIGGER items_audit_update AFTER UPDATE OF kind, org, project, branch, service, sprint,
    tenant, environment, title, body, content, data, metadata, source, tags, status,
    content_hash, ttl, expires_at, deleted_at, superseded_by ON items
BEGIN
    SELECT RAISE(ABORT, 'audit_context is missing: item changes cannot be audited, so they are refused')
    WHERE NOT EXISTS (SELECT 1 FROM audit_context WHERE id = 1);
    INSERT INTO audit_append (at, operation, item_id, kind, org, project, branch, service, sprint,
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
               WHEN 'supersede' THEN 'superseded by ' || NEW.superseded_by
               ELSE op || 'd ' || NEW.kind
           END
    FROM audit_context c,
         (SELECT CASE
                     WHEN OLD.superseded_by IS NULL AND NEW.superseded_by IS NOT NULL THEN 'supersede'
                     WHEN OLD.deleted_at IS NULL AND NEW.deleted_at IS NOT NULL THEN 'delete'
                     WHEN OLD.deleted_at IS NOT NULL AND NEW.deleted_at IS NULL THEN 'restore'
                     ELSE 'update'
                 END AS op)
    WHERE c.id = 1;
END;

CREATE TRIGGER items_audit_delete AFTER DELETE ON items
BEGIN
    SELECT RAISE(ABORT, 'audit_context is missing: item changes cannot be audited, so they are refused')
    WHERE NOT EXISTS (SELECT 1 FROM audit_context WHERE id = 1);
    INSERT INTO audit_append (at, operation, item_id, kind, org, project, branch, service, sprint,
                              tenant, environment, actor, tool, session, request_id, batch_id,
                              hash_before, hash_after, summary)
    SELECT CAST(unixepoch('subsec') * 1000 AS INTEGER), 'purge', OLD.id, OLD.kind, OLD.org,
           OLD.project, OLD.branch, OLD.service, OLD.sprint, OLD.tenant, OLD.environment,
           c.actor, c.tool, c.session, c.request_id, c.batch_id, OLD.content_hash, NULL,
           'purged ' || OLD.kind || ' (removed for good)'
    FROM audit_context c WHERE c.id = 1;
END;

-- Items older than the audit trail (written before migration 4) get one `baseline` record,
-- so every item has a trail and the verifier can check items against their last record.
INSERT INTO audit_append (at, operation, item_id, kind, org, project, branch, service, sprint,
                          tenant, environment, hash_before, hash_after, summary)
SELECT CAST(unixepoch('subsec') * 1000 AS INTEGER), 'baseline', i.id, i.kind, i.org, i.project,
       i.branch, i.service, i.sprint, i.tenant, i.environment, NULL, i.content_hash,
       'present when the audit chain began'
FROM items i WHERE NOT EXISTS (SELECT 1 FROM audit_log a WHERE a.item_id = i.id)
ORDER BY i.rowid;
