//! `cortex-bench secrets` on a tiny corpus and a Markdown folder: the table, and each finding
//! named with its secret masked.

use crate::common::Env;
use serde_json::json;

#[test]
fn secrets_counts_findings_and_masks_them() {
    let env = Env::new();
    let key = format!("AKIA{}", "QWERTYUIOPASDFGH");
    let corpus = [
        json!({"_id": "d1", "title": "Plain", "text": "Sessions moved to PostgreSQL."}),
        json!({"_id": "d2", "title": "Leak", "text": format!("the backup job uses {key} today")}),
    ];
    let corpus: String = corpus.iter().map(|row| format!("{row}\n")).collect();
    std::fs::write(env.dir.path().join("corpus.jsonl"), corpus).unwrap();
    std::fs::create_dir(env.dir.path().join("notes")).unwrap();
    std::fs::write(env.dir.path().join("notes/a.md"), "# Notes\n\nNothing secret here.\n").unwrap();
    let out =
        env.run(&["secrets", "--corpus", "corpus.jsonl", "--markdown", "notes", "--seconds", "0.05"], &[]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("| corpus.jsonl | 2 |"), "{text}");
    assert!(text.contains("| notes | 1 |"), "{text}");
    assert!(
        text.contains("- corpus.jsonl d2: aws-access-token: the backup job uses ⟦AKIA…⟧ today"),
        "{text}"
    );
    assert!(!text.contains(&key), "the secret itself is never printed: {text}");
}
