-- A revoked API key can be restored (`revoked_at` back to NULL) within 10 minutes of its
-- revocation, by this machine's clock, and in no other way: the guard still refuses every
-- other change and a second revocation, and a second trigger refuses a restore of an older
-- revocation (or of one stamped more than a minute ahead of the clock, planted to stay
-- restorable). The figures are cortex_domain::api_key::RESTORE_WINDOW_MS and
-- RESTORE_CLOCK_SLACK_MS. A restore is recorded as `key_restore` ("restored API key NAME")
-- under the writer's principal and channel, as the revocation is.
DROP TRIGGER api_keys_revoke_only;
DROP TRIGGER api_keys_audit_revoke;

CREATE TRIGGER api_keys_revoke_only BEFORE UPDATE ON api_keys
WHEN NEW.name IS NOT OLD.name OR NEW.lookup IS NOT OLD.lookup OR NEW.secret_hash IS NOT OLD.secret_hash
  OR NEW.org IS NOT OLD.org OR NEW.projects IS NOT OLD.projects OR NEW.role IS NOT OLD.role
  OR NEW.rate_per_second IS NOT OLD.rate_per_second OR NEW.created_at IS NOT OLD.created_at
  OR NEW.expires_at IS NOT OLD.expires_at OR (OLD.revoked_at IS NULL) = (NEW.revoked_at IS NULL)
BEGIN
    SELECT RAISE(ABORT, 'an API key only changes by being revoked, once, and restored within 10 minutes of that: create a new key instead');
END;

CREATE TRIGGER api_keys_restore_window BEFORE UPDATE ON api_keys
WHEN OLD.revoked_at IS NOT NULL AND NEW.revoked_at IS NULL
  AND (OLD.revoked_at < CAST(unixepoch('subsec') * 1000 AS INTEGER) - 600000
       OR OLD.revoked_at > CAST(unixepoch('subsec') * 1000 AS INTEGER) + 60000)
BEGIN
    SELECT RAISE(ABORT, 'this API key was revoked more than 10 minutes ago: it cannot be restored; make a new key with cortex keys create');
END;

CREATE TRIGGER api_keys_audit_revocation AFTER UPDATE OF revoked_at ON api_keys
BEGIN
    INSERT INTO audit_append (at, operation, item_id, kind, org, project, branch, service, sprint,
                              tenant, environment, actor, tool, session, request_id, batch_id,
                              hash_before, hash_after, summary, principal, via)
    SELECT CAST(unixepoch('subsec') * 1000 AS INTEGER),
           CASE WHEN NEW.revoked_at IS NULL THEN 'key_restore' ELSE 'key_revoke' END,
           NULL, 'api_key', NEW.org, '', '', '', '', '', '', NULL, NULL, NULL, c.request_id, NULL, NULL,
           NULL,
           CASE WHEN NEW.revoked_at IS NULL THEN 'restored' ELSE 'revoked' END || ' API key ' || NEW.name,
           c.principal, c.via
    FROM audit_context c WHERE c.id = 1;
END;
