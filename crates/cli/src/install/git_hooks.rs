//! `cortex install git-hooks`: the repository's `post-commit`, `post-merge` and
//! `post-checkout` hooks run `cortex git sync --hook NAME`, so the branch's path table follows
//! every commit, merge, pull and checkout, and merges are recorded as they happen. A hook the
//! user has keeps its own lines: cortex's block is put right after its first line (so an `exit`
//! at its end cannot skip it) between two marker lines, and replaced there on the next run. A
//! hook that is not a shell script is left alone and named, with the line to add by hand.

use super::Edit;
use crate::error::CliError;
use std::path::Path;

/// The hooks written: git runs each after what can move a branch's head.
pub const HOOKS: [&str; 3] = ["post-commit", "post-merge", "post-checkout"];

const BEGIN: &str = "# >>> cortex: memory follows the code (cortex install git-hooks)";
const END: &str = "# <<< cortex";

/// The block of one hook: `env` (the settings in force, such as the database) then the command.
fn block(hook: &str, exe: &str, env: &[(String, String)]) -> String {
    let assignments = super::hooks::assignments(env);
    format!("{BEGIN}\n{assignments}{exe} git sync --hook {hook} >/dev/null 2>&1 || true\n{END}\n")
}

/// The edit of each hook in `dir` (none for a hook already as wanted). A hook that is not a
/// shell script is an error naming it.
pub fn edits(dir: &Path, exe: &str, env: &[(String, String)]) -> Result<Vec<Option<Edit>>, CliError> {
    HOOKS.iter().map(|hook| edit(&dir.join(hook), hook, exe, env)).collect()
}

fn edit(path: &Path, hook: &str, exe: &str, env: &[(String, String)]) -> Result<Option<Edit>, CliError> {
    let wanted = block(hook, exe, env);
    let Some(text) = super::read(path)? else {
        return Ok(Some(Edit {
            path: path.to_path_buf(),
            changes: vec![format!("+ {hook}: cortex git sync")],
            text: format!("#!/bin/sh\n{wanted}"),
        }));
    };
    if let (Some(start), Some(end)) = (text.find(BEGIN), text.find(END)) {
        let end = end + END.len() + usize::from(text[end + END.len()..].starts_with('\n'));
        if text[start..end] == wanted {
            return Ok(super::unchanged(path, "cortex's hook"));
        }
        let text = format!("{}{wanted}{}", &text[..start], &text[end..]);
        return Ok(Some(Edit {
            path: path.to_path_buf(),
            changes: vec![format!("~ {hook}: cortex git sync")],
            text,
        }));
    }
    let first = text.lines().next().unwrap_or_default();
    let shell =
        first.starts_with("#!") && ["sh", "bash", "zsh", "dash", "ksh"].iter().any(|s| first.ends_with(s));
    if !shell {
        return Err(CliError::argument(
            "git-hooks",
            format!(
                "{} is not a shell script, so cortex does not edit it: add `{exe} git sync --hook {hook} || true` to it yourself",
                path.display()
            ),
        ));
    }
    let at = text.find('\n').map_or(text.len(), |n| n + 1);
    let text = format!(
        "{}{}{wanted}{}",
        &text[..at],
        if at == text.len() && !text.ends_with('\n') { "\n" } else { "" },
        &text[at..]
    );
    Ok(Some(Edit {
        path: path.to_path_buf(),
        changes: vec![format!("+ {hook}: cortex git sync, after your hook's first line")],
        text,
    }))
}

/// Makes the written hooks runnable (git skips a hook that is not).
pub fn make_executable(dir: &Path) -> Result<(), CliError> {
    use std::os::unix::fs::PermissionsExt;
    for hook in HOOKS {
        let path = dir.join(hook);
        let meta = std::fs::metadata(&path).map_err(|e| CliError::io("read", &path, e))?;
        let mut permissions = meta.permissions();
        permissions.set_mode(permissions.mode() | 0o755);
        std::fs::set_permissions(&path, permissions).map_err(|e| CliError::io("make runnable", &path, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Vec<(String, String)> {
        vec![("CORTEX_DB".into(), "/data/it's.db".into())]
    }

    #[test]
    fn a_new_hook_is_a_script_and_a_second_run_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("post-commit");
        let edit = edit(&path, "post-commit", "/bin/cortex", &env()).unwrap().unwrap();
        assert_eq!(
            edit.text,
            "#!/bin/sh\n# >>> cortex: memory follows the code (cortex install git-hooks)\n\
             CORTEX_DB='/data/it'\\''s.db' /bin/cortex git sync --hook post-commit >/dev/null 2>&1 || true\n# <<< cortex\n"
        );
        std::fs::write(&path, &edit.text).unwrap();
        assert!(super::edit(&path, "post-commit", "/bin/cortex", &env()).unwrap().is_none());
        let moved = super::edit(&path, "post-commit", "/opt/cortex", &env()).unwrap().unwrap();
        assert_eq!(moved.text.matches(BEGIN).count(), 1);
        assert!(moved.text.contains("/opt/cortex git sync"));
    }

    #[test]
    fn the_users_hook_keeps_its_lines_and_a_foreign_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("post-merge");
        std::fs::write(&path, "#!/usr/bin/env bash\nnpm install\nexit 0\n").unwrap();
        let edit = edit(&path, "post-merge", "cortex", &[]).unwrap().unwrap();
        assert!(edit.text.starts_with("#!/usr/bin/env bash\n# >>> cortex"), "{}", edit.text);
        assert!(edit.text.ends_with("# <<< cortex\nnpm install\nexit 0\n"), "{}", edit.text);
        std::fs::write(&path, "#!/usr/bin/env python3\nprint('hi')\n").unwrap();
        let refused = match super::edit(&path, "post-merge", "cortex", &[]) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("a python hook was edited"),
        };
        assert!(refused.contains("not a shell script"), "{refused}");
    }
}
