//! The command an agent's config runs to start cortex. Normally this binary by its full path —
//! also when it was installed into a Python environment (`pip install cortex-memory`, `uv tool
//! install`), whose `bin/cortex` stays where it is. A cortex that `uvx` runs lives in uv's cache
//! instead, which uv empties as it likes: then the entry runs `uvx --from cortex-memory[...]
//! cortex`, as README's config does.

use std::path::{Path, PathBuf};

#[derive(Debug, PartialEq, Eq)]
pub struct Launcher {
    pub command: String,
    /// The arguments before cortex's own (`serve`, `context`).
    pub leading: Vec<String>,
}

impl Launcher {
    /// Where this binary runs from: `uv_caches` are uv's cache folders, `semantic` whether the
    /// model came with it (the `semantic` extra), to ask uvx for the same.
    pub fn of(exe: &Path, uv_caches: &[PathBuf], semantic: bool) -> Launcher {
        let prefix = exe.parent().and_then(Path::parent);
        let from_uvx = prefix.is_some_and(|p| {
            p.join("pyvenv.cfg").is_file() && uv_caches.iter().any(|cache| p.starts_with(cache))
        });
        if !from_uvx {
            return Launcher { command: exe.to_string_lossy().into_owned(), leading: Vec::new() };
        }
        let package = if semantic { "cortex-memory[semantic]" } else { "cortex-memory" };
        Launcher { command: "uvx".into(), leading: vec!["--from".into(), package.into(), "cortex".into()] }
    }

    /// This process's. uv's cache is `UV_CACHE_DIR`, else `$XDG_CACHE_HOME/uv`, else
    /// `~/.cache/uv` (on macOS too); each is looked in, whichever uv was told.
    pub fn current(exe: &Path, home: &Path) -> Launcher {
        let var = |name| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let mut caches: Vec<PathBuf> = var("UV_CACHE_DIR").into_iter().collect();
        caches.extend(var("XDG_CACHE_HOME").map(|d| d.join("uv")));
        caches.push(home.join(".cache").join("uv"));
        let model = cortex_embed::locate_model(crate::model_dir());
        Launcher::of(exe, &caches, model.from.starts_with("the Python package"))
    }

    /// The arguments of `command` to run cortex's `subcommand`.
    pub fn args(&self, subcommand: &str) -> Vec<String> {
        self.leading.iter().cloned().chain([subcommand.to_string()]).collect()
    }

    /// The same as one shell command line (a hook's `command`), words with spaces quoted.
    pub fn command_line(&self, subcommand: &str) -> String {
        format!("{} {subcommand}", self.shell_prefix())
    }

    /// The command line before cortex's own arguments, words with spaces quoted.
    pub fn shell_prefix(&self) -> String {
        std::iter::once(&self.command)
            .chain(&self.leading)
            .map(|w| {
                if w.contains(char::is_whitespace) || w.contains('[') {
                    format!("\"{w}\"")
                } else {
                    w.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_with_cortex(prefix: &Path) -> PathBuf {
        std::fs::create_dir_all(prefix.join("bin")).unwrap();
        std::fs::write(prefix.join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
        prefix.join("bin").join("cortex")
    }

    #[test]
    fn a_cortex_run_by_uvx_is_started_by_uvx() {
        let root = tempfile::tempdir().unwrap();
        let cache = root.path().join("cache").join("uv");
        let exe = env_with_cortex(&cache.join("archive-v0").join("abc123"));
        let launcher = Launcher::of(&exe, std::slice::from_ref(&cache), true);
        assert_eq!(launcher.command, "uvx");
        assert_eq!(launcher.args("serve"), ["--from", "cortex-memory[semantic]", "cortex", "serve"]);
        assert_eq!(launcher.command_line("context"), "uvx --from \"cortex-memory[semantic]\" cortex context");
        assert_eq!(Launcher::of(&exe, &[cache], false).leading[1], "cortex-memory");
    }

    #[test]
    fn a_binary_or_a_lasting_venv_is_started_by_its_path() {
        let root = tempfile::tempdir().unwrap();
        let cache = root.path().join("cache").join("uv");
        let venv_exe = env_with_cortex(&root.path().join("project").join(".venv"));
        let launcher = Launcher::of(&venv_exe, std::slice::from_ref(&cache), true);
        assert_eq!(
            (launcher.command.as_str(), launcher.args("serve")),
            (venv_exe.to_str().unwrap(), vec!["serve".into()])
        );
        let plain = root.path().join("my tools").join("cortex");
        assert_eq!(
            Launcher::of(&plain, &[cache], false).command_line("context"),
            format!("\"{}\" context", plain.display())
        );
    }
}
