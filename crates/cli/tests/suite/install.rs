//! `cortex install` against temporary config homes: a fresh config gets
//! the entry, a config with other servers keeps them, a second run changes nothing,
//! `--dry-run` writes nothing, and a malformed file is named in the error and left untouched;
//! the entry carries the database and server settings the user named, and a project install
//! for Claude Code approves its server.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

struct Homes {
    _root: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
}

fn homes() -> Homes {
    let root = tempfile::tempdir().unwrap();
    let (home, project) = (root.path().join("home"), root.path().join("project"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    Homes { _root: root, home, project }
}

fn install(h: &Homes, args: &[&str]) -> Output {
    install_with(h, args, &[])
}

/// `cortex install` with only the `CORTEX_*` settings given here: the entry carries what is
/// in force, so the test's own environment must not leak into it.
fn install_with(h: &Homes, args: &[&str], settings: &[(&str, &str)]) -> Output {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_cortex"));
    for (name, _) in std::env::vars().filter(|(name, _)| name.starts_with("CORTEX_")) {
        command.env_remove(name);
    }
    command.current_dir(&h.project).env("HOME", &h.home).envs(settings.iter().copied());
    command.arg("install").args(args).output().unwrap()
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

const EXE: &str = env!("CARGO_BIN_EXE_cortex");

#[test]
fn claude_code_gets_the_server_and_its_hooks_once() {
    let h = homes();
    let out = install(&h, &["claude-code"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mcp = json(&h.project.join(".mcp.json"));
    assert_eq!(mcp["mcpServers"]["cortex"]["command"], EXE);
    assert_eq!(mcp["mcpServers"]["cortex"]["args"], serde_json::json!(["serve"]));
    let settings = json(&h.project.join(".claude/settings.json"));
    let hook = &settings["hooks"]["SessionStart"][0]["hooks"][0];
    assert_eq!(hook["command"], format!("{EXE} context"));
    let recall = &settings["hooks"]["UserPromptSubmit"][0]["hooks"][0];
    assert_eq!(recall["command"], format!("{EXE} recall"), "{settings}");
    assert_eq!(recall["type"], "command");
    assert!(recall["timeout"].as_u64().is_some_and(|t| t <= 10), "a stuck hook must not hold a prompt long");

    let before = std::fs::read(h.project.join(".mcp.json")).unwrap();
    let again = install(&h, &["claude-code"]);
    assert!(String::from_utf8_lossy(&again.stdout).contains("nothing to change"));
    assert_eq!(std::fs::read(h.project.join(".mcp.json")).unwrap(), before, "a second run changes nothing");
    let settings = json(&h.project.join(".claude/settings.json"));
    assert_eq!(settings["hooks"]["SessionStart"].as_array().unwrap().len(), 1, "one hook, not two");
    assert_eq!(settings["hooks"]["UserPromptSubmit"].as_array().unwrap().len(), 1, "one hook, not two");
}

#[test]
fn other_servers_and_settings_are_kept_in_their_order() {
    let h = homes();
    let user = h.home.join(".claude.json");
    std::fs::write(
        &user,
        r#"{"zeta": 1, "mcpServers": {"github": {"command": "gh-mcp"}}, "alpha": {"x": true}}"#,
    )
    .unwrap();
    std::fs::create_dir_all(h.home.join(".claude")).unwrap();
    std::fs::write(
        h.home.join(".claude/settings.json"),
        r#"{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo hi"}]}]}, "model": "opus"}"#,
    )
    .unwrap();
    assert!(install(&h, &["claude-code", "--user"]).status.success());
    let text = std::fs::read_to_string(&user).unwrap();
    let config: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(config["mcpServers"]["github"]["command"], "gh-mcp");
    assert_eq!(config["alpha"]["x"], true);
    assert!(text.find("zeta").unwrap() < text.find("alpha").unwrap(), "keys keep their order: {text}");
    let settings = json(&h.home.join(".claude/settings.json"));
    assert_eq!(settings["model"], "opus");
    assert_eq!(settings["hooks"]["SessionStart"].as_array().unwrap().len(), 2, "the existing hook stays");
    assert_eq!(settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"], format!("{EXE} recall"));
}

#[test]
fn cursor_and_codex_configs_get_the_server_and_keep_the_rest() {
    let h = homes();
    assert!(install(&h, &["cursor"]).status.success());
    assert_eq!(json(&h.project.join(".cursor/mcp.json"))["mcpServers"]["cortex"]["args"][0], "serve");

    let codex = h.home.join(".codex/config.toml");
    std::fs::create_dir_all(codex.parent().unwrap()).unwrap();
    std::fs::write(&codex, "# my settings\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"x\"\n")
        .unwrap();
    assert!(install(&h, &["codex"]).status.success());
    let text = std::fs::read_to_string(&codex).unwrap();
    assert!(text.starts_with("# my settings\nmodel = \"o3\""), "comments and layout stay: {text}");
    assert!(text.contains("[mcp_servers.other]") && text.contains("[mcp_servers.cortex]"), "{text}");
    assert!(text.contains(&format!("command = \"{EXE}\"")) && text.contains("args = [\"serve\"]"), "{text}");
    let again = install(&h, &["codex"]);
    assert!(String::from_utf8_lossy(&again.stdout).contains("nothing to change"));
    assert_eq!(std::fs::read_to_string(&codex).unwrap(), text);
    assert!(!install(&h, &["codex", "--project"]).status.success(), "Codex has no project config");
}

#[test]
fn dry_run_writes_nothing_and_a_malformed_config_is_left_untouched() {
    let h = homes();
    let out = install(&h, &["cursor", "--dry-run"]);
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("would change"));
    assert!(!h.project.join(".cursor").exists(), "a dry run creates nothing");

    let broken = h.project.join(".mcp.json");
    std::fs::write(&broken, "{\"mcpServers\": {").unwrap();
    let out = install(&h, &["claude-code"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(".mcp.json") && stderr.contains("not valid JSON"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&broken).unwrap(), "{\"mcpServers\": {", "left as it was");
    assert!(!h.project.join(".claude/settings.json").exists(), "nothing else written either");
}

#[test]
fn the_entry_carries_the_database_and_server_settings_in_force() {
    let h = homes();
    let settings = [
        ("CORTEX_DB", "team.db"),
        ("CORTEX_EMBEDDER", "none"),
        ("CORTEX_PROJECT", "pinned"),
        ("CORTEX_HTTP_ADDR", "127.0.0.1:8787"),
    ];
    let out = install_with(&h, &["claude-code", "--user"], &settings);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let entry = &json(&h.home.join(".claude.json"))["mcpServers"]["cortex"];
    let db = h.project.join("team.db").to_string_lossy().into_owned();
    assert_eq!(
        entry["env"],
        serde_json::json!({ "CORTEX_DB": db, "CORTEX_EMBEDDER": "none" }),
        "the database made absolute and the embedder; not the scope, not the HTTP address"
    );
    let claude_settings = json(&h.home.join(".claude/settings.json"));
    assert_eq!(claude_settings["env"], entry["env"], "the hooks get the same settings");
    assert_eq!(claude_settings["hooks"]["SessionStart"].as_array().unwrap().len(), 1, "beside the hook");
    let again = install_with(&h, &["claude-code", "--user"], &settings);
    assert!(String::from_utf8_lossy(&again.stdout).contains("nothing to change"));
    let moved = install_with(&h, &["claude-code", "--user", "--db", "/srv/other.db"], &settings);
    assert!(String::from_utf8_lossy(&moved.stdout).contains("~ mcpServers.cortex"));
    assert_eq!(
        json(&h.home.join(".claude.json"))["mcpServers"]["cortex"]["env"]["CORTEX_DB"],
        "/srv/other.db"
    );

    // Codex clears the environment of the servers it starts: the TOML entry says it all, and
    // the embedding API key is let through by name, never written.
    let codex = h.home.join(".codex/config.toml");
    let openai = [("CORTEX_DB", "postgres://cortex@db/memory"), ("CORTEX_EMBEDDER", "openai")];
    assert!(install_with(&h, &["codex"], &openai).status.success());
    let text = std::fs::read_to_string(&codex).unwrap();
    assert!(
        text.contains(r#"env = { CORTEX_DB = "postgres://cortex@db/memory", CORTEX_EMBEDDER = "openai" }"#),
        "{text}"
    );
    assert!(text.contains(r#"env_vars = ["OPENAI_API_KEY"]"#), "{text}");
    let again = install_with(&h, &["codex"], &openai);
    assert!(String::from_utf8_lossy(&again.stdout).contains("nothing to change"));
    assert!(install_with(&h, &["codex"], &[]).status.success());
    let text = std::fs::read_to_string(&codex).unwrap();
    assert!(!text.contains("env"), "nothing named, nothing carried: {text}");
}

#[test]
fn a_project_install_approves_its_server_in_the_local_settings() {
    let h = homes();
    let local = h.project.join(".claude/settings.local.json");
    std::fs::create_dir_all(local.parent().unwrap()).unwrap();
    std::fs::write(&local, r#"{"enabledMcpjsonServers": ["github"], "permissions": {"allow": []}}"#).unwrap();
    assert!(install(&h, &["claude-code"]).status.success());
    let settings = json(&local);
    assert_eq!(settings["enabledMcpjsonServers"], serde_json::json!(["github", "cortex"]));
    assert!(settings["permissions"]["allow"].is_array(), "other settings stay");
    let again = install(&h, &["claude-code"]);
    assert!(String::from_utf8_lossy(&again.stdout).contains("nothing to change"));
    assert_eq!(json(&local)["enabledMcpjsonServers"].as_array().unwrap().len(), 2, "approved once");
    assert!(install(&h, &["claude-code", "--user"]).status.success());
    assert!(!h.home.join(".claude/settings.local.json").exists(), "a user install needs no approval");

    // The database is this user's: it goes to the local settings, not the shared ones.
    assert!(install_with(&h, &["claude-code", "--db", "/srv/memory.db"], &[]).status.success());
    let settings = json(&local);
    assert_eq!(settings["env"]["CORTEX_DB"], "/srv/memory.db");
    assert_eq!(settings["enabledMcpjsonServers"].as_array().unwrap().len(), 2);
    assert!(json(&h.project.join(".claude/settings.json")).get("env").is_none());
}

#[test]
fn the_hooks_that_keep_what_a_session_learned_are_installed_once() {
    let h = homes();
    assert!(install(&h, &["claude-code"]).status.success());
    let settings = json(&h.project.join(".claude/settings.json"));
    for (event, args) in [
        ("SessionStart", "context"),
        ("UserPromptSubmit", "recall"),
        ("PostToolUse", "hook post-tool-use"),
        ("Stop", "hook stop"),
        ("PreCompact", "hook pre-compact"),
    ] {
        let groups = settings["hooks"][event].as_array().unwrap_or_else(|| panic!("{event}: {settings}"));
        assert_eq!(groups.len(), 1, "{event}");
        assert_eq!(groups[0]["hooks"][0]["command"], format!("{EXE} {args}"), "{event}");
    }
    let before = std::fs::read(h.project.join(".claude/settings.json")).unwrap();
    let again = install(&h, &["claude-code"]);
    let said = String::from_utf8_lossy(&again.stdout);
    assert!(said.contains("the cortex Stop hook: nothing to change"), "{said}");
    assert_eq!(settings["hooks"]["PostToolUse"][0]["matcher"], "mcp__.*memory_find");
    assert_eq!(
        std::fs::read(h.project.join(".claude/settings.json")).unwrap(),
        before,
        "a second run changes nothing"
    );

    assert!(install(&h, &["codex"]).status.success());
    let codex = json(&h.home.join(".codex/hooks.json"));
    assert_eq!(codex["hooks"]["Stop"][0]["hooks"][0]["command"], format!("{EXE} hook stop"));
    assert_eq!(codex["hooks"]["SessionStart"][0]["hooks"][0]["command"], format!("{EXE} context"));
    let recall = &codex["hooks"]["UserPromptSubmit"][0]["hooks"][0];
    assert_eq!(recall["command"], format!("{EXE} recall"));
    assert!(recall["timeout"].as_u64().is_some_and(|t| t <= 10), "a stuck hook must not hold a prompt long");
    assert!(codex["hooks"].get("PreCompact").is_none(), "Codex cannot add text to its compaction");

    let cursor_hooks = h.project.join(".cursor/hooks.json");
    std::fs::create_dir_all(cursor_hooks.parent().unwrap()).unwrap();
    std::fs::write(&cursor_hooks, r#"{"version": 1, "hooks": {"afterFileEdit": [{"command": "fmt"}]}}"#)
        .unwrap();
    assert!(install(&h, &["cursor"]).status.success());
    let cursor = json(&cursor_hooks);
    assert_eq!(cursor["hooks"]["stop"], serde_json::json!([{"command": format!("{EXE} hook stop")}]));
    assert_eq!(cursor["hooks"]["afterFileEdit"][0]["command"], "fmt", "other hooks stay");
    let rule = std::fs::read_to_string(h.project.join(".cursor/rules/cortex.mdc")).unwrap();
    assert!(
        rule.starts_with("---\n") && rule.contains("alwaysApply: true") && rule.contains("memory_store"),
        "{rule}"
    );
    std::fs::write(h.project.join(".cursor/rules/cortex.mdc"), "my own rule\n").unwrap();
    let again = install(&h, &["cursor"]);
    assert!(String::from_utf8_lossy(&again.stdout).contains("left as it is"));
    assert_eq!(std::fs::read_to_string(h.project.join(".cursor/rules/cortex.mdc")).unwrap(), "my own rule\n");
    assert_eq!(json(&cursor_hooks)["hooks"]["stop"].as_array().unwrap().len(), 1, "one hook, not two");
}

/// A copy of this cortex inside a Python environment at `prefix`, as pip or uvx lays it out.
fn cortex_in_python_env(prefix: &Path) -> PathBuf {
    std::fs::create_dir_all(prefix.join("bin")).unwrap();
    std::fs::write(prefix.join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
    let exe = prefix.join("bin").join("cortex");
    std::fs::copy(EXE, &exe).unwrap();
    exe
}

/// Runs the copied `exe`. A process another test forks while the copy is being written holds
/// it open for writing until that child execs, and exec then fails as "text file busy": the
/// run is tried again for a while.
fn install_from(exe: &Path, h: &Homes, args: &[&str]) -> Output {
    let mut tries = 0;
    loop {
        let run = std::process::Command::new(exe)
            .current_dir(&h.project)
            .env("HOME", &h.home)
            .env_remove("XDG_CACHE_HOME")
            .env_remove("UV_CACHE_DIR")
            .env_remove("CORTEX_MODEL_DIR")
            .arg("install")
            .args(args)
            .output();
        match run {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 50 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => return other.unwrap(),
        }
    }
}

#[test]
fn a_cortex_run_by_uvx_is_written_as_uvx_and_one_in_a_venv_by_its_path() {
    let h = homes();
    let uvx_env = h.home.join(".cache/uv/archive-v0/Xyz12");
    let exe = cortex_in_python_env(&uvx_env);
    let out = install_from(&exe, &h, &["cursor"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let entry = &json(&h.project.join(".cursor/mcp.json"))["mcpServers"]["cortex"];
    assert_eq!(
        *entry,
        serde_json::json!({"command": "uvx", "args": ["--from", "cortex-memory", "cortex", "serve"]})
    );

    // With the `semantic` extra's model beside it, uvx is asked for the extra too.
    let model = uvx_env.join("lib/python3.12/site-packages/cortex_memory_model/model");
    std::fs::create_dir_all(&model).unwrap();
    for file in ["model.safetensors", "tokenizer.json", "config.json"] {
        std::fs::write(model.join(file), b"x").unwrap();
    }
    let out = install_from(&exe, &h, &["claude-code"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let entry = &json(&h.project.join(".mcp.json"))["mcpServers"]["cortex"];
    assert_eq!(entry["args"], serde_json::json!(["--from", "cortex-memory[semantic]", "cortex", "serve"]));
    let hook = &json(&h.project.join(".claude/settings.json"))["hooks"]["SessionStart"][0]["hooks"][0];
    assert_eq!(hook["command"], "uvx --from \"cortex-memory[semantic]\" cortex context");

    let venv_exe = cortex_in_python_env(&h.project.join(".venv"));
    let out = install_from(&venv_exe, &h, &["cursor", "--user"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let entry = &json(&h.home.join(".cursor/mcp.json"))["mcpServers"]["cortex"];
    assert_eq!(entry["command"], venv_exe.to_str().unwrap(), "a venv lasts: its cortex by path");
}

#[test]
fn codex_hooks_carry_the_database_and_follow_it_when_it_changes() {
    // Codex's hooks get no settings block: each command line carries the database named, and a
    // second install naming another database changes the hooks in place, never doubles them.
    let h = homes();
    let first = h.home.join("it's memory.db");
    let out = install_with(&h, &["codex"], &[("CORTEX_DB", first.to_str().unwrap())]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("/hooks"),
        "the user is told Codex skips hooks until trusted"
    );
    let quoted = format!("'{}'", first.to_str().unwrap().replace('\'', "'\\''"));
    let hooks = json(&h.home.join(".codex/hooks.json"));
    for (event, args) in [("SessionStart", "context"), ("UserPromptSubmit", "recall"), ("Stop", "hook stop")]
    {
        assert_eq!(
            hooks["hooks"][event][0]["hooks"][0]["command"],
            format!("CORTEX_DB={quoted} {EXE} {args}")
        );
    }
    let second = h.home.join("team.db");
    let out = install_with(&h, &["codex"], &[("CORTEX_DB", second.to_str().unwrap())]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("~ hooks.UserPromptSubmit"), "{out:?}");
    let hooks = json(&h.home.join(".codex/hooks.json"));
    for event in ["SessionStart", "UserPromptSubmit", "Stop"] {
        let groups = hooks["hooks"][event].as_array().unwrap();
        assert_eq!(groups.len(), 1, "{event}: one hook, not two");
        let command = groups[0]["hooks"][0]["command"].as_str().unwrap();
        assert!(command.starts_with(&format!("CORTEX_DB='{}' ", second.display())), "{command}");
    }
}
