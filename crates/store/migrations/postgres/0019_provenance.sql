-- Memory that follows the code, kept beside the items rather than in their rows.
--
-- item_provenance: the commit an item was written at, whether the files it concerns had
-- uncommitted changes then, and those files, each with the path's change count at that commit
-- ([{"path": …, "changes": …}]). Goes with its item.
CREATE TABLE item_provenance (
    item_id     uuid    PRIMARY KEY REFERENCES items (id) ON DELETE CASCADE,
    commit_id   text,
    commit_time bigint,
    branch      text,
    dirty       boolean NOT NULL DEFAULT false,
    files       jsonb   NOT NULL DEFAULT '[]'
);

-- git_paths: per branch of a project, each path its history touched: the newest commit that
-- touched it, that commit's time, how many ancestors of the head touched it, and what it is at
-- the head. git_heads: the head each branch's table was brought up to. Written by `cortex git
-- sync` (the git hooks, `cortex ingest --git`, `cortex serve` at start); read by finds.
CREATE TABLE git_paths (
    org         text    NOT NULL,
    project     text    NOT NULL,
    branch      text    NOT NULL,
    path        text    NOT NULL,
    commit_id   text    NOT NULL,
    commit_time bigint  NOT NULL,
    changes     bigint  NOT NULL,
    state       text    NOT NULL CHECK (state IN ('present', 'deleted', 'renamed')),
    renamed_to  text,
    PRIMARY KEY (org, project, branch, path)
);

CREATE TABLE git_heads (
    org         text    NOT NULL,
    project     text    NOT NULL,
    branch      text    NOT NULL,
    commit_id   text    NOT NULL,
    commit_time bigint  NOT NULL,
    synced_at   bigint  NOT NULL,
    PRIMARY KEY (org, project, branch)
);

-- git_merges: a branch's work seen in another's history. Items of from_branch created up to
-- detected_at are visible from into_branch until the record is undone. One record per merge
-- commit; creating and undoing one are audited (records about no item).
CREATE TABLE git_merges (
    id          bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    org         text    NOT NULL,
    project     text    NOT NULL,
    from_branch text    NOT NULL,
    into_branch text    NOT NULL,
    commit_id   text    NOT NULL,
    how         text    NOT NULL CHECK (how IN ('merge', 'fast_forward', 'squash')),
    detected_at bigint  NOT NULL,
    undone_at   bigint
);
CREATE UNIQUE INDEX git_merges_once ON git_merges (org, project, from_branch, into_branch, commit_id);
CREATE INDEX git_merges_into ON git_merges (org, project, into_branch);

CREATE FUNCTION git_merges_audit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'merge records are undone, not deleted: use cortex git unmerge'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF TG_OP = 'INSERT' THEN
        INSERT INTO audit_log (at, operation, item_id, kind, org, project, branch, request_id,
                               batch_id, summary, principal, via)
        VALUES (NEW.detected_at, 'branch_merge', NULL, 'branch', NEW.org, NEW.project, NEW.into_branch,
                nullif(current_setting('cortex.request_id', true), ''),
                nullif(current_setting('cortex.batch_id', true), ''),
                NEW.from_branch || ' merged into ' || NEW.into_branch || ' (' || NEW.how || ' at '
                    || left(NEW.commit_id, 12) || '): its items are visible from ' || NEW.into_branch,
                nullif(current_setting('cortex.principal', true), ''),
                coalesce(nullif(current_setting('cortex.via', true), ''), 'cortex git'));
    ELSIF NEW.undone_at IS NOT NULL AND OLD.undone_at IS NULL THEN
        INSERT INTO audit_log (at, operation, item_id, kind, org, project, branch, request_id,
                               batch_id, summary, principal, via)
        VALUES (NEW.undone_at, 'branch_unmerge', NULL, 'branch', NEW.org, NEW.project, NEW.into_branch,
                nullif(current_setting('cortex.request_id', true), ''),
                nullif(current_setting('cortex.batch_id', true), ''),
                'undone: ' || NEW.from_branch || ' merged into ' || NEW.into_branch || ' at '
                    || left(NEW.commit_id, 12),
                nullif(current_setting('cortex.principal', true), ''),
                coalesce(nullif(current_setting('cortex.via', true), ''), 'cortex git'));
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER git_merges_audit AFTER INSERT OR UPDATE OF undone_at ON git_merges
    FOR EACH ROW EXECUTE FUNCTION git_merges_audit();
CREATE TRIGGER git_merges_keep BEFORE DELETE ON git_merges
    FOR EACH ROW EXECUTE FUNCTION git_merges_audit();
