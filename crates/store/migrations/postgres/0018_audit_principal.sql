-- Who did it, as the server established it: every record written from now on names the
-- authenticated principal (`principal`: `key:<org>/<name>`, `oauth:<subject> at <issuer>`,
-- `local:<user>`, …; crates/domain/src/principal.rs) and what the change came through (`via`:
-- `memory_store`, `web UI`, `cortex ingest`, `cortex import`, `cortex keys`, `purge`, …), both
-- from the writer's transaction settings (`cortex.principal`, `cortex.via`), never from the
-- item. `actor`, `tool` and `session` become only what the client said of itself: the `source`
-- the request sent with an insert or update (an import: the item's own), nothing for a
-- delete, restore or supersede (the item's stored `source` is its last writer's claim, not
-- this one's). Before, the item's claim won over the writer's, so any writer could name
-- another as the actor.
--
-- The chain covers both new fields: records written from now on are hashed in the canonical
-- form version 2 (`cortex-audit-v2`, the 20 fields of version 1 then `principal` and `via`),
-- and say so in `chain_version`. Records written before keep version 1 and their hashes: the
-- chain is append-only, nothing is rehashed, and they verify as they always did.
ALTER TABLE audit_log ADD COLUMN principal text, ADD COLUMN via text,
    ADD COLUMN chain_version smallint NOT NULL DEFAULT 1;

CREATE FUNCTION audit_record_hash_v2(prev text, r audit_log) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT encode(sha256(convert_to(prev || E'\ncortex-audit-v2'
        || audit_field(r.seq::text) || audit_field(r.at::text) || audit_field(r.operation)
        || audit_field(r.item_id::text) || audit_field(r.kind) || audit_field(r.org)
        || audit_field(r.project) || audit_field(r.branch) || audit_field(r.service)
        || audit_field(r.sprint) || audit_field(r.tenant) || audit_field(r.environment)
        || audit_field(r.actor) || audit_field(r.tool) || audit_field(r.session)
        || audit_field(r.request_id) || audit_field(r.batch_id) || audit_field(r.hash_before)
        || audit_field(r.hash_after) || audit_field(r.summary) || audit_field(r.principal)
        || audit_field(r.via), 'UTF8')), 'hex')
$$;

CREATE OR REPLACE FUNCTION audit_log_chain() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    head audit_log;
BEGIN
    -- The chain has one head: appends take turns (the key is crate::postgres::AUDIT_LOCK).
    -- Under READ COMMITTED the next statement sees the previous holder's commit; under a
    -- stricter isolation a stale head gives a seq that exists already, and the primary key
    -- refuses the insert instead of forking the chain.
    PERFORM pg_advisory_xact_lock(109330312749429);
    SELECT * INTO head FROM audit_log ORDER BY seq DESC LIMIT 1;
    NEW.seq := coalesce(head.seq, 0) + 1;
    NEW.prev_hash := coalesce(head.hash, repeat('0', 64));
    NEW.chain_version := 2;
    NEW.hash := audit_record_hash_v2(NEW.prev_hash, NEW);
    RETURN NEW;
END $$;

CREATE OR REPLACE FUNCTION items_audit() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r items;
    op text;
    summary text;
    before text;
    after text;
    claim jsonb;
BEGIN
    IF TG_OP = 'INSERT' THEN
        r := NEW;
        op := coalesce(nullif(current_setting('cortex.insert_as', true), ''), 'insert');
        summary := op || 'ed ' || NEW.kind;
        after := NEW.content_hash;
        claim := NEW.source;
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
            claim := NEW.source;
        END IF;
    END IF;
    INSERT INTO audit_log (at, operation, item_id, kind, org, project, branch, service, sprint,
                           tenant, environment, actor, tool, session, request_id, batch_id,
                           hash_before, hash_after, summary, principal, via)
    VALUES ((extract(epoch FROM clock_timestamp()) * 1000)::bigint, op, r.id, r.kind, r.org,
            r.project, r.branch, r.service, r.sprint, r.tenant, r.environment,
            claim ->> 'actor', claim ->> 'tool', claim ->> 'session',
            nullif(current_setting('cortex.request_id', true), ''),
            nullif(current_setting('cortex.batch_id', true), ''),
            before, after, summary,
            nullif(current_setting('cortex.principal', true), ''),
            nullif(current_setting('cortex.via', true), ''));
    RETURN NULL;
END $$;

-- Key records name who made or revoked the key, and the expiry it was made with.
CREATE OR REPLACE FUNCTION api_keys_audit() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    op text;
    summary text;
BEGIN
    IF TG_OP = 'INSERT' THEN
        op := 'key_create';
        summary := 'created API key ' || NEW.name || ' (role ' || NEW.role || ', projects '
            || CASE WHEN cardinality(NEW.projects) = 0 THEN 'all'
                    ELSE array_to_string(NEW.projects, ', ') END || '); expires '
            || CASE WHEN NEW.expires_at IS NULL THEN 'never'
                    ELSE to_char(to_timestamp(NEW.expires_at / 1000.0) AT TIME ZONE 'UTC',
                                 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') END;
    ELSE
        op := 'key_revoke';
        summary := 'revoked API key ' || NEW.name;
    END IF;
    INSERT INTO audit_log (at, operation, item_id, kind, org, request_id, summary, principal, via)
    VALUES ((extract(epoch FROM clock_timestamp()) * 1000)::bigint, op, NULL, 'api_key', NEW.org,
            nullif(current_setting('cortex.request_id', true), ''), summary,
            nullif(current_setting('cortex.principal', true), ''),
            nullif(current_setting('cortex.via', true), ''));
    RETURN NULL;
END $$;
