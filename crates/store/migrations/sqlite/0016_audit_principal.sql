-- Who did it, as the server established it: every record written from now on names the
-- authenticated principal (`principal`: `key:<org>/<name>`, `oauth:<subject> at <issuer>`,
-- `local:<user>`, …; crates/domain/src/principal.rs) and what the change came through (`via`:
-- `memory_store`, `web UI`, `cortex ingest`, `cortex import`, `cortex keys`, `purge`, …), both
-- from the writer's context, never from the item. `actor`, `tool` and `session` become only
-- what the client said of itself: the `source` the request sent with an insert or update
-- (an import: the item's own), nothing for a delete, restore or supersede (the item's stored
-- `source` is its last writer's claim, not this one's). Before, the item's claim won over the
-- writer's, so any writer could name another as the actor.
--
-- The chain covers both new fields: records written from now on are hashed in the canonical
-- form version 2 (`cortex-audit-v2`, the 20 fields of version 1 then `principal` and `via`,
-- by `cortex_audit_hash_v2`), and say so in `chain_version`. Records written before keep
-- version 1 and their hashes: the chain is append-only, nothing is rehashed, and they verify
-- as they always did.
ALTER TABLE audit_log ADD COLUMN principal TEXT;
ALTER TABLE audit_log ADD COLUMN via TEXT;
ALTER TABLE audit_log ADD COLUMN chain_version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE audit_context ADD COLUMN principal TEXT;
ALTER TABLE audit_context ADD COLUMN via TEXT;

-- Only the next link of the chain, and only in version 2.
DROP TRIGGER audit_log_chained;
CREATE TRIGGER audit_log_chained BEFORE INSERT ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit records are append-only and chained: insert through audit_append, which writes the next record of the chain')
    WHERE NEW.seq IS NOT (SELECT coalesce(max(seq), 0) + 1 FROM audit_log)
       OR NEW.chain_version IS NOT 2
       OR NEW.prev_hash IS NOT coalesce((SELECT hash FROM audit_log ORDER BY seq DESC LIMIT 1),
                                        '0000000000000000000000000000000000000000000000000000000000000000')
       OR NEW.hash IS NOT cortex_audit_hash_v2(NEW.prev_hash, NEW.seq, NEW.at, NEW.operation,
                                               NEW.item_id, NEW.kind, NEW.org, NEW.project,
                                               NEW.branch, NEW.service, NEW.sprint, NEW.tenant,
                                               NEW.environment, NEW.actor, NEW.tool, NEW.session,
                                               NEW.request_id, NEW.batch_id, NEW.hash_before,
                                               NEW.hash_after, NEW.summary, NEW.principal, NEW.via);
END;

DROP TRIGGER audit_append_insert;
DROP VIEW audit_append;
CREATE VIEW audit_append AS
    SELECT at, operation, item_id, kind, org, project, branch, service, sprint, tenant,
           environment, actor, tool, session, request_id, batch_id, hash_before, hash_after,
           summary, principal, via
    FROM audit_log WHERE 0;

CREATE TRIGGER audit_append_insert INSTEAD OF INSERT ON audit_append
BEGIN
    INSERT INTO audit_log (seq, at, operation, item_id, kind, org, project, branch, service,
                           sprint, tenant, environment, actor, tool, session, request_id,
                           batch_id, hash_before, hash_after, summary, principal, via,
                           chain_version, prev_hash, hash)
    SELECT h.seq, NEW.at, NEW.operation, NEW.item_id, NEW.kind, coalesce(NEW.org, ''),
           coalesce(NEW.project, ''), coalesce(NEW.branch, ''), coalesce(NEW.service, ''),
           coalesce(NEW.sprint, ''), coalesce(NEW.tenant, ''), coalesce(NEW.environment, ''),
           NEW.actor, NEW.tool, NEW.session, NEW.request_id, NEW.batch_id, NEW.hash_before,
           NEW.hash_after, NEW.summary, NEW.principal, NEW.via, 2, h.prev,
           cortex_audit_hash_v2(h.prev, h.seq, NEW.at, NEW.operation, NEW.item_id, NEW.kind,
                                coalesce(NEW.org, ''), coalesce(NEW.project, ''),
                                coalesce(NEW.branch, ''), coalesce(NEW.service, ''),
                                coalesce(NEW.sprint, ''), coalesce(NEW.tenant, ''),
                                coalesce(NEW.environment, ''), NEW.actor, NEW.tool, NEW.session,
                                NEW.request_id, NEW.batch_id, NEW.hash_before, NEW.hash_after,
                                NEW.summary, NEW.principal, NEW.via)
    FROM (SELECT coalesce(max(seq), 0) + 1 AS seq,
                 coalesce((SELECT hash FROM audit_log ORDER BY seq DESC LIMIT 1),
                          '0000000000000000000000000000000000000000000000000000000000000000') AS prev
          FROM audit_log) h;
END;

DROP TRIGGER items_audit_insert;
DROP TRIGGER items_audit_update;
DROP TRIGGER items_audit_delete;

CREATE TRIGGER items_audit_insert AFTER INSERT ON items
BEGIN
    SELECT RAISE(ABORT, 'audit_context is missing: item changes cannot be audited, so they are refused')
    WHERE NOT EXISTS (SELECT 1 FROM audit_context WHERE id = 1);
    INSERT INTO audit_append (at, operation, item_id, kind, org, project, branch, service, sprint,
                              tenant, environment, actor, tool, session, request_id, batch_id,
                              hash_before, hash_after, summary, principal, via)
    SELECT CAST(unixepoch('subsec') * 1000 AS INTEGER), coalesce(c.insert_as, 'insert'), NEW.id,
           NEW.kind, NEW.org, NEW.project, NEW.branch, NEW.service, NEW.sprint, NEW.tenant,
           NEW.environment, json_extract(NEW.source, '$.actor'), json_extract(NEW.source, '$.tool'),
           json_extract(NEW.source, '$.session'), c.request_id, c.batch_id, NULL, NEW.content_hash,
           coalesce(c.insert_as, 'insert') || 'ed ' || NEW.kind, c.principal, c.via
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
                              hash_before, hash_after, summary, principal, via)
    SELECT CAST(unixepoch('subsec') * 1000 AS INTEGER), op, NEW.id, NEW.kind, NEW.org,
           NEW.project, NEW.branch, NEW.service, NEW.sprint, NEW.tenant, NEW.environment,
           CASE op WHEN 'update' THEN json_extract(NEW.source, '$.actor') END,
           CASE op WHEN 'update' THEN json_extract(NEW.source, '$.tool') END,
           CASE op WHEN 'update' THEN json_extract(NEW.source, '$.session') END,
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
           END,
           c.principal, c.via
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
                              hash_before, hash_after, summary, principal, via)
    SELECT CAST(unixepoch('subsec') * 1000 AS INTEGER), 'purge', OLD.id, OLD.kind, OLD.org,
           OLD.project, OLD.branch, OLD.service, OLD.sprint, OLD.tenant, OLD.environment,
           NULL, NULL, NULL, c.request_id, c.batch_id, OLD.content_hash, NULL,
           'purged ' || OLD.kind || ' (removed for good)', c.principal, c.via
    FROM audit_context c WHERE c.id = 1;
END;

-- Key records name who made or revoked the key, and the expiry it was made with.
DROP TRIGGER api_keys_audit_create;
DROP TRIGGER api_keys_audit_revoke;

CREATE TRIGGER api_keys_audit_create AFTER INSERT ON api_keys
BEGIN
    INSERT INTO audit_append (at, operation, item_id, kind, org, project, branch, service, sprint,
                              tenant, environment, actor, tool, session, request_id, batch_id,
                              hash_before, hash_after, summary, principal, via)
    SELECT CAST(unixepoch('subsec') * 1000 AS INTEGER), 'key_create', NULL, 'api_key', NEW.org,
           '', '', '', '', '', '', NULL, NULL, NULL, c.request_id, NULL, NULL, NULL,
           'created API key ' || NEW.name || ' (role ' || NEW.role || ', projects '
               || CASE WHEN NEW.projects = '[]' THEN 'all' ELSE NEW.projects END || '); expires '
               || CASE WHEN NEW.expires_at IS NULL THEN 'never'
                       ELSE strftime('%Y-%m-%dT%H:%M:%fZ', NEW.expires_at / 1000.0, 'unixepoch') END,
           c.principal, c.via
    FROM audit_context c WHERE c.id = 1;
END;

CREATE TRIGGER api_keys_audit_revoke AFTER UPDATE OF revoked_at ON api_keys
BEGIN
    INSERT INTO audit_append (at, operation, item_id, kind, org, project, branch, service, sprint,
                              tenant, environment, actor, tool, session, request_id, batch_id,
                              hash_before, hash_after, summary, principal, via)
    SELECT CAST(unixepoch('subsec') * 1000 AS INTEGER), 'key_revoke', NULL, 'api_key', NEW.org,
           '', '', '', '', '', '', NULL, NULL, NULL, c.request_id, NULL, NULL, NULL,
           'revoked API key ' || NEW.name, c.principal, c.via
    FROM audit_context c WHERE c.id = 1;
END;
