-- The web UI's sign-ins through an identity provider under way, so that the provider's
-- callback may reach any `cortex serve --http` over this database (src/postgres/ui_sessions.rs).
-- A row is found by the SHA-256 of the sign-in's `state` and holds its PKCE verifier only sealed
-- under a key derived from that state; it is deleted when the callback takes it (once).
CREATE TABLE ui_sign_ins (
    state_hash      text PRIMARY KEY,
    -- The PKCE verifier, sealed (AES-256-GCM, nonce first).
    sealed_verifier bytea NOT NULL,
    -- The database's clock, epoch ms.
    started_at      bigint NOT NULL
);
CREATE INDEX ui_sign_ins_started ON ui_sign_ins (started_at);
