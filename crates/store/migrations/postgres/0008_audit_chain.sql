-- The audit trail becomes a hash chain (crates/store/src/audit_chain.rs, which computes the
-- same hash for the verifier): every record carries `prev_hash` (the hash of the record
-- before it) and `hash`. A trigger fills `seq`, `prev_hash` and `hash` of every insert under
-- one transaction lock, so whatever is written (an item's change, a refused change, any
-- future record) is the next link, and a value given for them is ignored. Audited
-- transactions therefore take turns, from their first audit record to their commit.

ALTER TABLE audit_log ALTER COLUMN seq DROP IDENTITY;
ALTER TABLE audit_log ADD COLUMN prev_hash text, ADD COLUMN hash text;

-- One field of the canonical form: a newline, then `-` for NULL or the UTF-8 length, `:`, the value.
CREATE FUNCTION audit_field(v text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN v IS NULL THEN E'\n-' ELSE E'\n' || octet_length(convert_to(v, 'UTF8')) || ':' || v END
$$;

CREATE FUNCTION audit_record_hash(prev text, r audit_log) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT encode(sha256(convert_to(prev || E'\ncortex-audit-v1'
        || audit_field(r.seq::text) || audit_field(r.at::text) || audit_field(r.operation)
        || audit_field(r.item_id::text) || audit_field(r.kind) || audit_field(r.org)
        || audit_field(r.project) || audit_field(r.branch) || audit_field(r.service)
        || audit_field(r.sprint) || audit_field(r.tenant) || audit_field(r.environment)
        || audit_field(r.actor) || audit_field(r.tool) || audit_field(r.session)
        || audit_field(r.request_id) || audit_field(r.batch_id) || audit_field(r.hash_before)
        || audit_field(r.hash_after) || audit_field(r.summary), 'UTF8')), 'hex')
$$;

-- Seal the records written so far, oldest first (updates are refused otherwise).
ALTER TABLE audit_log DISABLE TRIGGER audit_log_append_only;
DO $$
DECLARE
    r audit_log;
    prev text := repeat('0', 64);
    h text;
BEGIN
    FOR r IN SELECT * FROM audit_log ORDER BY seq LOOP
        h := audit_record_hash(prev, r);
        UPDATE audit_log SET prev_hash = prev, hash = h WHERE seq = r.seq;
        prev := h;
    END LOOP;
END $$;
ALTER TABLE audit_log ENABLE TRIGGER audit_log_append_only;

CREATE FUNCTION audit_log_chain() RETURNS trigger LANGUAGE plpgsql AS $$
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
    NEW.hash := audit_record_hash(NEW.prev_hash, NEW);
    RETURN NEW;
END $$;
CREATE TRIGGER audit_log_chain BEFORE INSERT ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_chain();

-- Items older than the audit trail get one `baseline` record, so every item has a trail and
-- the verifier can check items against their last record.
INSERT INTO audit_log (at, operation, item_id, kind, org, project, branch, service, sprint,
                       tenant, environment, hash_after, summary)
SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint, 'baseline', i.id, i.kind, i.org,
       i.project, i.branch, i.service, i.sprint, i.tenant, i.environment, i.content_hash,
       'present when the audit chain began'
FROM items i WHERE NOT EXISTS (SELECT 1 FROM audit_log a WHERE a.item_id = i.id)
ORDER BY i.created_at, i.id;
