-- API keys of the HTTP team server (`cortex keys`, `cortex serve --http`). Only the SHA-256 of
-- each secret is kept; `lookup` is the public part of the token that finds the row. A key is
-- never deleted and never changed except by being revoked once, so the audit trail (written
-- here by the database, like item changes) tells every key's whole story: `key_create` and
-- `key_revoke` records, about no item (`item_id` NULL, `kind` 'api_key'), in the key's org.
CREATE TABLE api_keys (
    name            text    PRIMARY KEY,
    lookup          text    NOT NULL UNIQUE,
    secret_hash     text    NOT NULL,
    org             text    NOT NULL,
    projects        text[]  NOT NULL DEFAULT '{}',  -- empty: every project of the org
    role            text    NOT NULL CHECK (role IN ('read', 'write', 'admin')),
    rate_per_second double precision,               -- NULL: the server's default
    created_at      bigint  NOT NULL,
    expires_at      bigint,
    revoked_at      bigint
);

CREATE FUNCTION api_keys_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'TRUNCATE') THEN
        RAISE EXCEPTION 'API keys are revoked, not deleted: use cortex keys revoke NAME'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF (NEW.name, NEW.lookup, NEW.secret_hash, NEW.org, NEW.projects, NEW.role, NEW.rate_per_second,
        NEW.created_at, NEW.expires_at)
       IS DISTINCT FROM (OLD.name, OLD.lookup, OLD.secret_hash, OLD.org, OLD.projects, OLD.role,
                         OLD.rate_per_second, OLD.created_at, OLD.expires_at)
       OR OLD.revoked_at IS NOT NULL OR NEW.revoked_at IS NULL THEN
        RAISE EXCEPTION 'an API key only changes by being revoked, once: create a new key instead'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER api_keys_guard BEFORE UPDATE OR DELETE ON api_keys
    FOR EACH ROW EXECUTE FUNCTION api_keys_guard();
CREATE TRIGGER api_keys_no_truncate BEFORE TRUNCATE ON api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION api_keys_guard();

CREATE FUNCTION api_keys_audit() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    op text;
    summary text;
BEGIN
    IF TG_OP = 'INSERT' THEN
        op := 'key_create';
        summary := 'created API key ' || NEW.name || ' (role ' || NEW.role || ', projects '
            || CASE WHEN cardinality(NEW.projects) = 0 THEN 'all'
                    ELSE array_to_string(NEW.projects, ', ') END || ')';
    ELSE
        op := 'key_revoke';
        summary := 'revoked API key ' || NEW.name;
    END IF;
    INSERT INTO audit_log (at, operation, item_id, kind, org, tool, summary)
    VALUES ((extract(epoch FROM clock_timestamp()) * 1000)::bigint, op, NULL, 'api_key', NEW.org,
            'cortex keys', summary);
    RETURN NULL;
END $$;
CREATE TRIGGER api_keys_audit AFTER INSERT OR UPDATE OF revoked_at ON api_keys
    FOR EACH ROW EXECUTE FUNCTION api_keys_audit();
