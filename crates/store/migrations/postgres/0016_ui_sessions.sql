-- The web UI's sign-in sessions, so that every `cortex serve --http` over this database knows
-- them (src/postgres/ui_sessions.rs). A row is found by the SHA-256 of the cookie's random id,
-- and holds the API key's token only sealed under a key derived from that id: neither the
-- table nor a copy of it signs anyone in without the browser's cookie.
CREATE TABLE ui_sessions (
    id_hash    text PRIMARY KEY,
    -- The principal the session was started for (its id): each holds at most a set number.
    owner      text NOT NULL,
    -- The token, sealed (AES-256-GCM, nonce first); NULL for the keyless local user.
    sealed     bytea,
    csrf       text NOT NULL,
    -- The database's clock, epoch ms.
    started_at bigint NOT NULL,
    seen_at    bigint NOT NULL
);
CREATE INDEX ui_sessions_seen ON ui_sessions (seen_at);
CREATE INDEX ui_sessions_owner ON ui_sessions (owner, started_at);
