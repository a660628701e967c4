//! Settings are validated like requests: a bad flag or `CORTEX_*` value stops the binary
//! before it touches a database, with a message naming the variable and what is accepted;
//! nothing is stored under a bad scope, no folder is created for a bad URL. Every command checks
//! every setting, each bad value tried here comes from the settings table itself.

use cortex_server::settings::all;
use std::path::Path;
use std::process::{Command, Output};

/// `cortex store` of one section in `dir`, with the environment given (and a sound one else).
fn store_with(dir: &Path, env: &[(&str, &str)], db: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cortex"));
    cmd.current_dir(dir)
        .env("CORTEX_DB", dir.join("memory.db"))
        .env("CORTEX_ORG", "acme")
        .env("CORTEX_PROJECT", "api")
        .env("CORTEX_BRANCH", "main")
        .env("CORTEX_EMBEDDER", "none")
        .env("CORTEX_LOG", "warn");
    for (key, value) in env {
        cmd.env(key, value);
    }
    if let Some(db) = db {
        cmd.args(["--db", db]);
    }
    cmd.args(["store", r#"{"kind": "section", "content": "settings probe"}"#]).output().unwrap()
}

fn refused(out: &Output, name: &str, accepted: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{name}: accepted; stderr: {stderr}");
    assert!(out.stdout.is_empty(), "{name}: printed a result");
    assert!(stderr.contains(name) && stderr.contains(accepted), "{name}: {stderr}");
    assert!(!stderr.contains('\u{1b}'), "an escape sequence in a value is shown, not run: {stderr}");
}

#[test]
fn bad_scope_values_in_the_environment_are_refused_like_in_a_request() {
    let dir = tempfile::tempdir().unwrap();
    let long = "o".repeat(300);
    for (name, value, accepted) in [
        ("CORTEX_BRANCH", "ma\nin", "newlines"),
        ("CORTEX_ORG", "\u{1b}[31macme", "newlines"),
        ("CORTEX_ORG", long.as_str(), "128"),
        ("CORTEX_PROJECT", "a\tpi", "newlines"),
    ] {
        refused(&store_with(dir.path(), &[(name, value)], None), name, accepted);
    }
    assert!(!dir.path().join("memory.db").exists(), "nothing was stored under a bad scope");
}

#[test]
fn a_bad_database_setting_is_refused_not_read_as_a_file_name() {
    let dir = tempfile::tempdir().unwrap();
    refused(&store_with(dir.path(), &[], Some("")), "--db / CORTEX_DB", "postgres://");
    refused(
        &store_with(dir.path(), &[("CORTEX_DB", "mysql://root@localhost/memory")], None),
        "CORTEX_DB",
        "postgres://",
    );
    let created: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(created.is_empty(), "no file or folder was created: {created:?}");
}

#[test]
fn bad_values_of_the_other_settings_are_refused_with_what_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    for (name, value, accepted) in [
        ("CORTEX_EMBEDDER", "garbage", "openai"),
        ("CORTEX_NEAR_DUP_THRESHOLD", "high", "0 to 1"),
        ("CORTEX_NEAR_DUP_WINDOW_DAYS", "-3", "whole number"),
        ("CORTEX_LOG", "loud", "debug"),
        ("CORTEX_LOG_FORMAT", "yaml", "json"),
    ] {
        refused(&store_with(dir.path(), &[(name, value)], None), name, accepted);
    }
    let postgres = [("CORTEX_DB", "postgres://nobody@127.0.0.1:1/none"), ("CORTEX_DB_POOL_SIZE", "lots")];
    refused(&store_with(dir.path(), &postgres, None), "CORTEX_DB_POOL_SIZE", "1 to 1000");
    // The same binary with sound settings stores.
    let ok = store_with(dir.path(), &[], None);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
}

/// `cortex <args>` in `dir` with one setting set to `value` (and a sound environment else).
fn run_with(dir: &Path, name: &str, value: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cortex"))
        .current_dir(dir)
        .env("CORTEX_DB", dir.join("memory.db"))
        .env("CORTEX_EMBEDDER", "none")
        .env("CORTEX_LOG", "warn")
        .env(name, value)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn every_bad_value_the_settings_table_names_is_refused_by_stats_naming_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    let mut refused_names = Vec::new();
    for setting in all() {
        for bad in setting.refuses() {
            let out = run_with(dir.path(), setting.name(), &bad, &["stats"]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{}={bad:?}: {stderr}", setting.name());
            assert!(out.stdout.is_empty(), "{}={bad:?} printed a result", setting.name());
            assert!(stderr.starts_with(&format!("cortex: {}=", setting.name())), "{stderr}");
            assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
            refused_names.push(setting.name());
        }
    }
    for name in ["CORTEX_PURGE_INTERVAL_SECS", "CORTEX_HTTP_RATE", "CORTEX_DB_POOL_SIZE", "CORTEX_LOG_FORMAT"]
    {
        assert!(refused_names.contains(&name), "{name} was not tried");
    }
    let created: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(created.is_empty(), "no command got as far as the database: {created:?}");
}

#[test]
fn a_bad_value_is_said_with_what_is_expected_and_every_command_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    for args in [&["stats"][..], &["find", "deploy"], &["keys", "list"], &["serve"]] {
        let out = run_with(dir.path(), "CORTEX_PURGE_INTERVAL_SECS", "often", args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr).trim(),
            "cortex: CORTEX_PURGE_INTERVAL_SECS=\"often\": is not a whole number; expected a whole number from 0 to 31536000 (default 3600)"
        );
    }
    // A hook still exits 0 (an agent stops on anything else), saying why on stderr.
    let hook = run_with(dir.path(), "CORTEX_HTTP_RATE", "fast", &["context"]);
    assert_eq!(hook.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&hook.stderr).contains("CORTEX_HTTP_RATE"));
    assert!(hook.stdout.is_empty());
}

/// A container's secret: the database named in the file `CORTEX_DB_FILE` names, when `--db` and
/// `CORTEX_DB` say nothing; a missing or empty file stops the command naming the variable.
#[test]
fn the_database_can_come_from_a_file_and_a_bad_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("db-url");
    std::fs::write(&secret, format!("{}\n", dir.path().join("from-file.db").display())).unwrap();
    let stats = |file: &Path| {
        Command::new(env!("CARGO_BIN_EXE_cortex"))
            .current_dir(dir.path())
            .env_remove("CORTEX_DB")
            .env("CORTEX_DB_FILE", file)
            .env("CORTEX_LOG", "warn")
            .arg("stats")
            .output()
            .unwrap()
    };
    let out = stats(&secret);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(dir.path().join("from-file.db").exists(), "the file's database was opened");
    std::fs::write(&secret, "  \n").unwrap();
    refused(&stats(&secret), "CORTEX_DB_FILE", "empty");
    refused(&stats(&dir.path().join("missing")), "CORTEX_DB_FILE", "missing");
}
