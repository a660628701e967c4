-- API key names are unique per org, not across the server: one org neither learns another's
-- key names from "exists already" nor is kept from a name another org uses. A key is now
-- (org, name); its token's `lookup` stays unique. No row changes, so the guard trigger (which
-- refuses every change but a revocation) has nothing to refuse.
ALTER TABLE api_keys DROP CONSTRAINT api_keys_pkey, ADD PRIMARY KEY (org, name);
