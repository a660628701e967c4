-- A revoked API key can be restored (`revoked_at` back to NULL) within 10 minutes of its
-- revocation, by this database's clock, and in no other way: the guard still refuses every
-- other change, a second revocation, a delete, and a restore of an older revocation (or of
-- one stamped more than a minute ahead of the clock, planted to stay restorable). The figures
-- are cortex_domain::api_key::RESTORE_WINDOW_MS and RESTORE_CLOCK_SLACK_MS. A restore is
-- recorded as `key_restore` ("restored API key NAME"), by the trigger that records the
-- revocation, under the writer's principal and channel.
CREATE OR REPLACE FUNCTION api_keys_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    now_ms bigint := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
BEGIN
    IF TG_OP IN ('DELETE', 'TRUNCATE') THEN
        RAISE EXCEPTION 'API keys are revoked, not deleted: use cortex keys revoke NAME'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF (NEW.name, NEW.lookup, NEW.secret_hash, NEW.org, NEW.projects, NEW.role, NEW.rate_per_second,
        NEW.created_at, NEW.expires_at)
       IS DISTINCT FROM (OLD.name, OLD.lookup, OLD.secret_hash, OLD.org, OLD.projects, OLD.role,
                         OLD.rate_per_second, OLD.created_at, OLD.expires_at)
       OR (OLD.revoked_at IS NULL) = (NEW.revoked_at IS NULL) THEN
        RAISE EXCEPTION 'an API key only changes by being revoked, once, and restored within 10 minutes of that: create a new key instead'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF NEW.revoked_at IS NULL
       AND (OLD.revoked_at < now_ms - 600000 OR OLD.revoked_at > now_ms + 60000) THEN
        RAISE EXCEPTION 'API key % was revoked more than 10 minutes ago: it cannot be restored; make a new key with cortex keys create', OLD.name
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$;

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
    ELSIF NEW.revoked_at IS NULL THEN
        op := 'key_restore';
        summary := 'restored API key ' || NEW.name;
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
