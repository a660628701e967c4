-- Who deleted or restored an item is who asked, not who stored it: for those two operations
-- the writer's actor, tool and session (audit_context) win over the item's own `source`, which
-- the write leaves as it was. The trigger of 0009 otherwise unchanged.
DROP TRIGGER items_audit_update;

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
           CASE WHEN op IN ('delete', 'restore') THEN coalesce(c.actor, json_extract(NEW.source, '$.actor')) ELSE coalesce(json_extract(NEW.source, '$.actor'), c.actor) END,
           CASE WHEN op IN ('delete', 'restore') THEN coalesce(c.tool, json_extract(NEW.source, '$.tool')) ELSE coalesce(json_extract(NEW.source, '$.tool'), c.tool) END,
           CASE WHEN op IN ('delete', 'restore') THEN coalesce(c.session, json_extract(NEW.source, '$.session')) ELSE coalesce(json_extract(NEW.source, '$.session'), c.session) END,
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
