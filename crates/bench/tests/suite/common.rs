//! `cortex-bench` run as a process in a fresh working folder.

use std::process::{Command, Output};

/// A fresh working folder; `CORTEX_DB` names a memory in it that the harness must leave alone
/// (it makes databases of its own), and PostgreSQL's lexical indexes go in it too.
pub struct Env {
    pub dir: tempfile::TempDir,
}

impl Env {
    pub fn new() -> Env {
        Env { dir: tempfile::tempdir().unwrap() }
    }

    pub fn run(&self, args: &[&str], vars: &[(&str, &str)]) -> Output {
        let out = Command::new(env!("CARGO_BIN_EXE_cortex-bench"))
            .args(args)
            .envs(vars.iter().copied())
            .env("CORTEX_DB", self.memory())
            .env("CORTEX_LOG", "warn")
            .env("XDG_CACHE_HOME", self.dir.path().join("cache"))
            .env("TMPDIR", self.temp())
            .current_dir(self.dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        out
    }

    /// The temporary folder the harness is given (`TMPDIR`), made empty.
    pub fn temp(&self) -> std::path::PathBuf {
        let temp = self.dir.path().join("tmp");
        std::fs::create_dir_all(&temp).unwrap();
        temp
    }

    /// What the harness left in its temporary folder.
    pub fn left_in_temp(&self) -> Vec<String> {
        std::fs::read_dir(self.temp())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into())
            .collect()
    }

    /// The memory `CORTEX_DB` names.
    pub fn memory(&self) -> std::path::PathBuf {
        self.dir.path().join("memory.db")
    }
}

/// The cells of the table row that starts with these cells.
pub fn row<'a>(table: &'a str, first: &[&str]) -> Vec<&'a str> {
    let start = format!("| {} |", first.join(" | "));
    let line = table
        .lines()
        .find(|l| l.starts_with(&start))
        .unwrap_or_else(|| panic!("no row starting {start} in {table}"));
    line.trim_matches('|').split('|').map(str::trim).collect()
}
