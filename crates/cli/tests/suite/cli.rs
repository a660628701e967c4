//! The `cortex` binary driven as a user would, on each backend: subcommands, exit codes, the
//! rule that in `serve` stdout carries only JSON-RPC, and moving a memory between backends.

use cortex_testdb::{TestDb, per_backend};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Output, Stdio};

per_backend!(
    store_from_stdin_then_find_as_json_and_as_a_table,
    store_takes_an_argument_or_a_file_and_refusals_exit_2,
    stats_and_doctor_report_the_database_and_scope,
    serve_speaks_only_json_rpc_on_stdout_and_exits_cleanly_when_the_client_leaves,
    a_tampered_database_is_refused_with_a_clear_message,
    migrate_reports_the_schema_version,
    audit_shows_an_items_history,
    keys_are_created_once_listed_without_secrets_and_revoked,
    terminal_escapes_in_stored_text_never_reach_a_persons_terminal,
);

/// The binary run in a fresh working folder on one test database.
struct Env<'a> {
    dir: tempfile::TempDir,
    db: &'a TestDb,
}

impl Env<'_> {
    fn new(db: &TestDb) -> Env<'_> {
        Env { dir: tempfile::tempdir().unwrap(), db }
    }

    fn cortex(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_cortex"));
        cmd.env("CORTEX_DB", self.db.db_arg())
            .env("CORTEX_ORG", "acme")
            .env("CORTEX_PROJECT", "api")
            .env("CORTEX_BRANCH", "main")
            .env("CORTEX_LOG", "info")
            .current_dir(self.dir.path());
        cmd
    }

    fn run(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut child = self
            .cortex()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = child.stdin.take().unwrap();
        if let Some(text) = stdin {
            input.write_all(text.as_bytes()).unwrap();
        }
        drop(input);
        child.wait_with_output().unwrap()
    }
}

fn stdout_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

fn store_from_stdin_then_find_as_json_and_as_a_table(db: &TestDb) {
    let env = Env::new(db);
    let out = env.run(
        &["store"],
        Some(r#"{"kind": "section", "data": {"title": "Backups", "body": "Nightly pgbackrest snapshots"}}"#),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout_json(&out)["results"][0]["status"], "inserted");

    let out = env.run(&["find", "pgbackrest", "--json", "--mode", "fast"], None);
    let found = stdout_json(&out);
    assert_eq!(found["hits"][0]["title"], "Backups");
    assert_eq!(found["searched_scope"]["branch"], "main");

    let out = env.run(&["find", "pgbackrest"], None);
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("Backups") && table.contains("**pgbackrest**"), "{table}");
    // Without scores (brief detail) the first column is the rank, not a column of 0.000; the
    // kind is padded so the columns line up.
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("#     KIND         SCOPE"), "{table}");
    assert!(lines[1].starts_with("1     section      "), "{table}");
    assert!(!table.contains("0.000"), "{table}");
}

fn store_takes_an_argument_or_a_file_and_refusals_exit_2(db: &TestDb) {
    let env = Env::new(db);
    let file = env.dir.path().join("items.json");
    std::fs::write(&file, r#"[{"kind": "todo", "content": "one"}, {"kind": "todo", "content": "two"}]"#)
        .unwrap();
    let out = env.run(&["store", "--file", file.to_str().unwrap()], None);
    assert_eq!(stdout_json(&out)["summary"]["inserted"], 2);

    let out = env.run(&["store", r#"{"kind": "decision", "data": {"title": "x"}}"#], None);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stdout_json(&out)["results"][0]["status"], "validation_error");

    let out = env.run(&["store", "not json"], None);
    assert_eq!(out.status.code(), Some(2), "what the user gave exits 2");
    assert!(String::from_utf8_lossy(&out.stderr).contains("not JSON"));

    // An argument the command cannot use names its flag and exits 2; a file that cannot be
    // read exits 1.
    let out = env.run(&["audit", "--item", "not-an-id"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cortex: --item: \"not-an-id\" is not an item id"));
    let out = env.run(&["store", "--file", "/no/such/items.json"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read /no/such/items.json"));
}

fn stats_and_doctor_report_the_database_and_scope(db: &TestDb) {
    let env = Env::new(db);
    env.run(&["store", r#"{"kind": "todo", "content": "count me"}"#], None);
    let stats = stdout_json(&env.run(&["stats", "--json"], None));
    assert_eq!(stats["items"], 1);
    assert_eq!(stats["by_kind"][0]["kind"], "todo");
    let doctor = stdout_json(&env.run(&["doctor"], None));
    assert_eq!(doctor["schema_version"], db.target().latest_schema_version());
    assert_eq!(doctor["scope"]["scope"]["branch"], "main");
    assert_eq!(doctor["scope"]["branch_from"], "environment");
    let semantic = doctor["semantic_search"].as_str().unwrap();
    assert!(semantic.starts_with("enabled") || semantic.contains("cortex model install"), "{semantic}");
}

fn serve_speaks_only_json_rpc_on_stdout_and_exits_cleanly_when_the_client_leaves(db: &TestDb) {
    let env = Env::new(db);
    let mut child = env
        .cortex()
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut send = |v: Value| writeln!(stdin, "{v}").unwrap();
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "cli-test", "version": "1"}}}));
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let init: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "memory_store",
        "arguments": {"items": [{"kind": "todo", "content": "from serve"}]}}}));
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "exit status {status}");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    for l in rest.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("non-JSON on stdout ({e}): {l}"));
        assert_eq!(v["jsonrpc"], "2.0");
    }
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(stderr.contains("cortex serving MCP on stdio"), "logs go to stderr: {stderr}");
}

fn a_tampered_database_is_refused_with_a_clear_message(db: &TestDb) {
    let env = Env::new(db);
    env.run(&["stats"], None);
    // Simulate a migration edited after it was applied.
    let store = db.open();
    db.execute_raw("UPDATE schema_migrations SET checksum = 'edited'").unwrap();
    drop(store);
    let out = env.run(&["stats"], None);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("refusing to start"));
}

fn migrate_reports_the_schema_version(db: &TestDb) {
    let env = Env::new(db);
    let out = env.run(&["migrate"], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout_json(&out)["schema_version"], db.target().latest_schema_version());
}

/// SQLite → PostgreSQL → SQLite through `export` and `import`: every item arrives with its id,
/// timestamps, scope, deletion and vector, and a second import adds nothing.
#[test]
fn a_memory_moves_between_backends_and_back_unchanged() {
    const N: usize = 321;
    let (sqlite, postgres, back) = (TestDb::sqlite(), TestDb::postgres(), TestDb::sqlite());
    let source = Env::new(&sqlite);
    // dedupe off: with the embedder on, these similar texts would be near-duplicates.
    let items: Vec<Value> = (0..N)
        .map(|i| {
            json!({"kind": "todo", "content": format!("task number {i}"), "dedupe": false,
                        "scope": {"service": format!("svc{}", i % 3)}})
        })
        .collect();
    for chunk in items.chunks(100) {
        let out = source.run(&["store"], Some(&Value::Array(chunk.to_vec()).to_string()));
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let first = stdout_json(&source.run(&["find", "task", "--json", "--mode", "fast", "--limit", "1"], None));
    let deleted_id = first["hits"][0]["id"].as_str().unwrap().to_string();
    source.run(&["store", &json!({"operation": "delete", "id": deleted_id}).to_string()], None);

    let file = source.dir.path().join("memory.jsonl");
    let out = source.run(&["export", "--out", file.to_str().unwrap()], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text.lines().count(), N + 2, "header, items, end line");
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let item: Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
    if header["embedding_model"].is_string() {
        assert_eq!(item["vector"].as_array().map(Vec::len), Some(384), "vectors travel with their items");
    }

    let target = Env::new(&postgres);
    let report = stdout_json(&target.run(&["import", file.to_str().unwrap()], None));
    assert_eq!((report["items"].as_u64(), report["imported"].as_u64()), (Some(N as u64), Some(N as u64)));
    assert_eq!(report["verified"], N);
    let again = stdout_json(&target.run(&["import", file.to_str().unwrap()], None));
    assert_eq!((again["imported"].as_u64(), again["already_present"].as_u64()), (Some(0), Some(N as u64)));
    assert_eq!(
        stdout_json(&target.run(&["stats", "--json"], None))["items"],
        N - 1,
        "the deleted item stays deleted"
    );

    let round_trip = target.dir.path().join("back.jsonl");
    let out = target.run(&["export", "--out", round_trip.to_str().unwrap()], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let home = Env::new(&back);
    assert_eq!(stdout_json(&home.run(&["import", round_trip.to_str().unwrap()], None))["imported"], N);
    let out = home.run(&["export", "--out", home.dir.path().join("again.jsonl").to_str().unwrap()], None);
    assert!(out.status.success());
    let lines = |path: &std::path::Path| -> Vec<Value> {
        std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    };
    assert_eq!(lines(&file), lines(&home.dir.path().join("again.jsonl")), "the memory came back unchanged");
}

/// Exports two items, rewrites the file with `edit`, and imports it into an empty memory:
/// whether the import succeeded, its stderr, and how many items the memory holds after.
fn import_an_edited_export(edit: impl FnOnce(&str) -> String) -> (bool, String, Value) {
    let (sqlite, target_db) = (TestDb::sqlite(), TestDb::sqlite());
    let source = Env::new(&sqlite);
    source
        .run(&["store", r#"[{"kind": "todo", "content": "one"}, {"kind": "todo", "content": "two"}]"#], None);
    let file = source.dir.path().join("m.jsonl");
    source.run(&["export", "--out", file.to_str().unwrap()], None);
    std::fs::write(&file, edit(&std::fs::read_to_string(&file).unwrap())).unwrap();
    let target = Env::new(&target_db);
    let out = target.run(&["import", file.to_str().unwrap()], None);
    let items = stdout_json(&target.run(&["stats", "--json"], None))["items"].clone();
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned(), items)
}

#[test]
fn a_truncated_export_imports_nothing() {
    let (ok, stderr, items) =
        import_an_edited_export(|text| text.lines().take(2).collect::<Vec<_>>().join("\n"));
    assert!(!ok && stderr.contains("cut short"), "{stderr}");
    assert_eq!(items, 0);
}

/// A line that cannot be read (here: bytes that are not UTF-8) used to end
/// the read quietly, and the import then blamed a file "cut short".
#[test]
fn an_unreadable_line_in_an_export_is_named() {
    let (sqlite, target_db) = (TestDb::sqlite(), TestDb::sqlite());
    let source = Env::new(&sqlite);
    source
        .run(&["store", r#"[{"kind": "todo", "content": "one"}, {"kind": "todo", "content": "two"}]"#], None);
    let file = source.dir.path().join("m.jsonl");
    source.run(&["export", "--out", file.to_str().unwrap()], None);
    let text = std::fs::read_to_string(&file).unwrap();
    let mut lines: Vec<Vec<u8>> = text.lines().map(|l| l.as_bytes().to_vec()).collect();
    lines[2].splice(10..10, [0xff, 0xfe]);
    std::fs::write(&file, lines.join(&b"\n"[..])).unwrap();
    let target = Env::new(&target_db);
    let out = target.run(&["import", file.to_str().unwrap()], None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("line 3: cannot be read"), "{stderr}");
    assert_eq!(stdout_json(&target.run(&["stats", "--json"], None))["items"], 0);
}

#[test]
fn an_export_edited_to_hold_vectors_of_the_wrong_length_imports_nothing() {
    let (ok, stderr, items) = import_an_edited_export(|text| {
        let mut lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        lines[0]["embedding_model"] = json!("some-model:3");
        lines[1]["vector"] = json!([0.1, 0.2, 0.3]);
        lines[2]["vector"] = json!([0.1, 0.2]);
        lines.iter().map(Value::to_string).collect::<Vec<_>>().join("\n")
    });
    assert!(!ok, "the import must fail");
    assert!(
        stderr.contains("line 3") && stderr.contains("`vector` has 2 values, the header's model has 3"),
        "{stderr}"
    );
    assert_eq!(items, 0, "nothing of the file was written");
}

#[test]
fn an_unreachable_postgres_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cortex"))
        .args(["--db", "postgres://cortex@127.0.0.1:1/nowhere", "stats"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("127.0.0.1:1") && stderr.contains("running and reachable"), "{stderr}");
}

fn audit_shows_an_items_history(db: &TestDb) {
    let env = Env::new(db);
    let stored = stdout_json(&env.run(
        &["store", r#"{"kind": "todo", "content": "audit me", "source": {"actor": "dana", "tool": "cli"}}"#],
        None,
    ));
    let id = stored["results"][0]["id"].as_str().unwrap().to_string();
    env.run(&["store", &json!({"operation": "delete", "id": id}).to_string()], None);
    let out = env.run(&["audit", "--json", "--item", &id], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let records = stdout_json(&out)["records"].as_array().unwrap().clone();
    let ops: Vec<&str> = records.iter().map(|r| r["operation"].as_str().unwrap()).collect();
    assert_eq!(ops, ["insert", "delete"]);
    // What the client said of itself is a labelled claim; who did it is the OS user running
    // the CLI, recorded by Cortex whatever the item says.
    assert_eq!(records[0]["claimed"]["actor"], "dana");
    assert_eq!(records[0]["via"], "memory_store");
    let principal = records[0]["principal"].as_str().unwrap();
    assert!(principal.starts_with("local") && principal != "local:dana", "{principal}");
    assert_eq!(records[1]["principal"], principal, "the delete is the same user's");
    assert!(records[1].get("claimed").is_none(), "a delete claims nothing: {}", records[1]);
    assert!(records[0]["request_id"].is_string());
    let since = env.run(&["audit", "--json", "--since", "2000-01-01T00:00:00Z"], None);
    assert_eq!(stdout_json(&since)["records"].as_array().unwrap().len(), 2);
    let bad = env.run(&["audit", "--since", "yesterday"], None);
    assert!(
        !bad.status.success() && String::from_utf8_lossy(&bad.stderr).contains("an age like 36h, 7d or 2w")
    );
}

fn keys_are_created_once_listed_without_secrets_and_revoked(db: &TestDb) {
    let env = Env::new(db);
    let args = ["keys", "create", "--name", "ci", "--org", "acme", "--project", "api", "--role", "read"];
    let out = env.run(&args, None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let created = stdout_json(&out);
    let token = created["token"].as_str().unwrap().to_string();
    assert!(token.starts_with("cortex_") && created["state"] == "active", "{created}");
    let again = env.run(&args, None);
    assert_eq!(again.status.code(), Some(2));
    assert_eq!(stdout_json(&again)["error"]["field"], "--name");
    let bad = env.run(&["keys", "create", "--name", "x", "--org", "acme", "--role", "root"], None);
    assert_eq!((bad.status.code(), stdout_json(&bad)["error"]["field"].clone()), (Some(2), json!("--role")));

    let list = env.run(&["keys", "list"], None);
    let text = String::from_utf8_lossy(&list.stdout).to_string();
    assert!(!text.contains(&token[24..]), "no secret in the list: {text}");
    assert_eq!(stdout_json(&list)["keys"][0]["name"], "ci");

    let revoked = env.run(&["keys", "revoke", "ci"], None);
    assert_eq!(stdout_json(&revoked)["state"], "revoked");
    assert_eq!(env.run(&["keys", "revoke", "ci"], None).status.code(), Some(2));
    let restored = env.run(&["keys", "restore", "ci", "--org", "acme"], None);
    assert_eq!(stdout_json(&restored)["state"], "active", "{}", String::from_utf8_lossy(&restored.stdout));
    let again = env.run(&["keys", "restore", "ci"], None);
    assert_eq!(again.status.code(), Some(2));
    assert!(stdout_json(&again)["error"]["message"].as_str().unwrap().contains("is not revoked"));
    let unknown = env.run(&["keys", "restore", "nobody"], None);
    assert_eq!(
        (unknown.status.code(), stdout_json(&unknown)["error"]["field"].clone()),
        (Some(2), json!("name"))
    );
    env.run(&["keys", "revoke", "ci"], None);
    let verify = env.run(&["audit", "--verify"], None);
    assert!(verify.status.success(), "{}", String::from_utf8_lossy(&verify.stdout));
    let ops: Vec<String> = stdout_json(&env.run(&["audit", "--json"], None))["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["operation"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ops, ["key_create", "key_revoke", "key_restore", "key_revoke"]);
    let human = String::from_utf8_lossy(&env.run(&["audit"], None).stdout).to_string();
    assert!(human.contains("key_restore") && human.contains("restored API key ci"), "{human}");
    // The KIND column starts at one place on every row, whatever the operation's length.
    let kind_at: std::collections::BTreeSet<usize> = human
        .lines()
        .filter_map(|l| l.find("api_key").or_else(|| l.starts_with("WHEN").then(|| l.find("KIND")).flatten()))
        .collect();
    assert_eq!(kind_at.len(), 1, "{human}");
}

/// The benchmarks and the evaluation are not shipped in `cortex`: its help lists neither, and
/// the old commands are refused (exit 2), naming `cortex-bench`, with whatever arguments.
#[test]
fn bench_and_eval_are_left_to_cortex_bench() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_cortex")).args(args).current_dir(dir.path()).output().unwrap()
    };
    let help = String::from_utf8(run(&["--help"]).stdout).unwrap();
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(commands.contains(&"serve") && commands.contains(&"find"), "{help}");
    assert!(!commands.contains(&"bench") && !commands.contains(&"eval"), "{help}");
    for (command, args) in
        [("bench", vec!["--semantic", "--sizes", "10", "--help"]), ("eval", vec!["--dataset", "x"])]
    {
        let out = run(&[&[command], args.as_slice()].concat());
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("run `cortex-bench {command}` with the same arguments")),
            "{stderr}"
        );
        assert!(out.stdout.is_empty(), "{out:?}");
    }
}

/// A title and body carrying escape sequences (clear the screen, set the window title, ring,
/// a C1 CSI, a right-to-left override) are printed without them by `find`, `show`, `audit` and
/// `context`, on stdout and stderr; `--json` keeps them, escaped, as the stored text.
fn terminal_escapes_in_stored_text_never_reach_a_persons_terminal(db: &TestDb) {
    let env = Env::new(db);
    let title = "Rotate \u{1b}[2J\u{1b}]0;pwned\u{7} keys \u{9b}31m\u{202e}now";
    let item = json!({"kind": "todo", "data": {"title": title, "status": "open"}, "content": "Rotate\r\u{1b}[1A the keys"});
    let stored = env.run(&["store", &item.to_string()], None);
    assert!(stored.status.success(), "{stored:?}");
    let id = stdout_json(&stored)["results"][0]["id"].as_str().unwrap().to_string();
    let hostile = |b: u8| b == 0x1b || b == 0x07 || b == b'\r';
    for args in [
        &["find", "Rotate"][..],
        &["context"],
        &["find", "Rotate", "--mode", "nonsense\u{1b}[2J"],
        &["show", &id, "\u{1b}]0;pwned\u{7}"],
        &["audit"],
    ] {
        let out = env.run(args, None);
        let both = [out.stdout.as_slice(), out.stderr.as_slice()].concat();
        assert!(!both.iter().any(|b| hostile(*b)), "{args:?}: {}", String::from_utf8_lossy(&both));
        let text = String::from_utf8_lossy(&both);
        assert!(!text.contains('\u{9b}') && !text.contains('\u{202e}'), "{args:?}: {text}");
    }
    let table = String::from_utf8(env.run(&["find", "Rotate"], None).stdout).unwrap();
    assert!(table.contains("Rotate [2J]0;pwned keys 31mnow"), "shown, defused: {table}");
    let json = stdout_json(&env.run(&["find", "Rotate", "--json"], None));
    assert_eq!(json["hits"][0]["title"], title, "JSON keeps the stored text");
}
