-- API key names are unique per org, not across the server: one org neither learns another's
-- key names from "exists already" nor is kept from a name another org uses. A key is now
-- (org, name); its token's `lookup` stays unique. SQLite cannot change a primary key in
-- place, so the table is made again with its rows and the triggers of 0011, unchanged.
DROP TRIGGER api_keys_no_delete;
DROP TRIGGER api_keys_revoke_only;
DROP TRIGGER api_keys_audit_create;
DROP TRIGGER api_keys_audit_revoke;

CREATE TABLE api_keys_by_org (
    name            TEXT    NOT NULL,
    lookup          TEXT    NOT NULL UNIQUE,
    secret_hash     TEXT    NOT NULL,
    org             TEXT    NOT NULL,
    projects        TEXT    NOT NULL DEFAULT '[]',  -- JSON array; empty: every project of the org
    role            TEXT    NOT NULL CHECK (role IN ('read', 'write', 'admin')),
    rate_per_second REAL,                           -- NULL: the server's default
    created_at      INTEGER NOT NULL,
    expires_at      INTEGER,
    revoked_at      INTEGER,
    PRIMARY KEY (org, name)
);
INSERT INTO api_keys_by_org (name, lookup, secret_hash, org, projects, role, rate_per_second,
                             created_at, expires_at, revoked_at)
SELECT name, lookup, secret_hash, org, projects, role, rate_per_second, created_at, expires_at,
       revoked_at
FROM api_keys;
DROP TABLE api_keys;
ALTER TABLE api_keys_by_org RENAME TO api_keys;

CREATE TRIGGER api_keys_no_delete BEFORE DELETE ON api_keys
BEGIN
    SELECT RAISE(ABORT, 'API keys are revoked, not deleted: use cortex keys revoke NAME');
END;

CREATE TRIGGER api_keys_revoke_only BEFORE UPDATE ON api_keys
WHEN NEW.name IS NOT OLD.name OR NEW.lookup IS NOT OLD.lookup OR NEW.secret_hash IS NOT OLD.secret_hash
  OR NEW.org IS NOT OLD.org OR NEW.projects IS NOT OLD.projects OR NEW.role IS NOT OLD.role
  OR NEW.rate_per_second IS NOT OLD.rate_per_second OR NEW.created_at IS NOT OLD.created_at
  OR NEW.expires_at IS NOT OLD.expires_at OR OLD.revoked_at IS NOT NULL OR NEW.revoked_at IS NULL
BEGIN
    SELECT RAISE(ABORT, 'an API key only changes by being revoked, once: create a new key instead');
END;

CREATE TRIGGER api_keys_audit_create AFTER INSERT ON api_keys
BEGIN
    INSERT INTO audit_append (at, operation, item_id, kind, org, project, branch, service, sprint,
                              tenant, environment, actor, tool, session, request_id, batch_id,
                              hash_before, hash_after, summary)
    VALUES (CAST(unixepoch('subsec') * 1000 AS INTEGER), 'key_create', NULL, 'api_key', NEW.org,
            '', '', '', '', '', '', NULL, 'cortex keys', NULL, NULL, NULL, NULL, NULL,
            'created API key ' || NEW.name || ' (role ' || NEW.role || ', projects '
                || CASE WHEN NEW.projects = '[]' THEN 'all' ELSE NEW.projects END || ')');
END;

CREATE TRIGGER api_keys_audit_revoke AFTER UPDATE OF revoked_at ON api_keys
BEGIN
    INSERT INTO audit_append (at, operation, item_id, kind, org, project, branch, service, sprint,
                              tenant, environment, actor, tool, session, request_id, batch_id,
                              hash_before, hash_after, summary)
    VALUES (CAST(unixepoch('subsec') * 1000 AS INTEGER), 'key_revoke', NULL, 'api_key', NEW.org,
            '', '', '', '', '', '', NULL, 'cortex keys', NULL, NULL, NULL, NULL, NULL,
            'revoked API key ' || NEW.name);
END;
