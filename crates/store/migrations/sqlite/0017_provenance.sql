-- Memory that follows the code, kept beside the items rather than in their rows.
--
-- item_provenance: the commit an item was written at, whether the files it concerns had
-- uncommitted changes then, and those files, each with the path's change count at that commit
-- (JSON [{"path": …, "changes": …}]). Goes with its item.
CREATE TABLE item_provenance (
    item_id     TEXT    PRIMARY KEY REFERENCES items (id) ON DELETE CASCADE,
    commit_id   TEXT,
    commit_time INTEGER,
    branch      TEXT,
    dirty       INTEGER NOT NULL DEFAULT 0 CHECK (dirty IN (0, 1)),
    files       TEXT    NOT NULL DEFAULT '[]'
) WITHOUT ROWID;

-- git_paths: per branch of a project, each path its history touched: the newest commit that
-- touched it, that commit's time, how many ancestors of the head touched it, and what it is at
-- the head. git_heads: the head each branch's table was brought up to. Written by `cortex git
-- sync` (the git hooks, `cortex ingest --git`, `cortex serve` at start); read by finds.
CREATE TABLE git_paths (
    org         TEXT    NOT NULL,
    project     TEXT    NOT NULL,
    branch      TEXT    NOT NULL,
    path        TEXT    NOT NULL,
    commit_id   TEXT    NOT NULL,
    commit_time INTEGER NOT NULL,
    changes     INTEGER NOT NULL,
    state       TEXT    NOT NULL CHECK (state IN ('present', 'deleted', 'renamed')),
    renamed_to  TEXT,
    PRIMARY KEY (org, project, branch, path)
) WITHOUT ROWID;

CREATE TABLE git_heads (
    org         TEXT    NOT NULL,
    project     TEXT    NOT NULL,
    branch      TEXT    NOT NULL,
    commit_id   TEXT    NOT NULL,
    commit_time INTEGER NOT NULL,
    synced_at   INTEGER NOT NULL,
    PRIMARY KEY (org, project, branch)
) WITHOUT ROWID;

-- git_merges: a branch's work seen in another's history. Items of from_branch created up to
-- detected_at are visible from into_branch until the record is undone. One record per merge
-- commit; creating and undoing one are audited (records about no item).
CREATE TABLE git_merges (
    id          INTEGER PRIMARY KEY,
    org         TEXT    NOT NULL,
    project     TEXT    NOT NULL,
    from_branch TEXT    NOT NULL,
    into_branch TEXT    NOT NULL,
    commit_id   TEXT    NOT NULL,
    how         TEXT    NOT NULL CHECK (how IN ('merge', 'fast_forward', 'squash')),
    detected_at INTEGER NOT NULL,
    undone_at   INTEGER
);
CREATE UNIQUE INDEX git_merges_once ON git_merges (org, project, from_branch, into_branch, commit_id);
CREATE INDEX git_merges_into ON git_merges (org, project, into_branch);

CREATE TRIGGER git_merges_audit_insert AFTER INSERT ON git_merges
BEGIN
    INSERT INTO audit_append (at, operation, item_id, kind, org, project, branch, service, sprint,
                              tenant, environment, actor, tool, session, request_id, batch_id,
                              hash_before, hash_after, summary, principal, via)
    SELECT NEW.detected_at, 'branch_merge', NULL, 'branch', NEW.org, NEW.project, NEW.into_branch,
           '', '', '', '', NULL, NULL, NULL, c.request_id, c.batch_id,
           NULL, NULL,
           NEW.from_branch || ' merged into ' || NEW.into_branch || ' (' || NEW.how || ' at '
               || substr(NEW.commit_id, 1, 12) || '): its items are visible from ' || NEW.into_branch,
           c.principal, coalesce(c.via, 'cortex git')
    FROM audit_context c WHERE c.id = 1;
END;

CREATE TRIGGER git_merges_audit_undo AFTER UPDATE OF undone_at ON git_merges
WHEN NEW.undone_at IS NOT NULL AND OLD.undone_at IS NULL
BEGIN
    INSERT INTO audit_append (at, operation, item_id, kind, org, project, branch, service, sprint,
                              tenant, environment, actor, tool, session, request_id, batch_id,
                              hash_before, hash_after, summary, principal, via)
    SELECT NEW.undone_at, 'branch_unmerge', NULL, 'branch', NEW.org, NEW.project, NEW.into_branch,
           '', '', '', '', NULL, NULL, NULL, c.request_id, c.batch_id,
           NULL, NULL,
           'undone: ' || NEW.from_branch || ' merged into ' || NEW.into_branch || ' at '
               || substr(NEW.commit_id, 1, 12),
           c.principal, coalesce(c.via, 'cortex git')
    FROM audit_context c WHERE c.id = 1;
END;

CREATE TRIGGER git_merges_keep BEFORE DELETE ON git_merges
BEGIN
    SELECT RAISE(ABORT, 'merge records are undone, not deleted: use cortex git unmerge');
END;
