//! `cortex-bench bench --fill`: a PostgreSQL database grown in whole steps, the items numbered on
//! from those already there; refused without a PostgreSQL database.

use crate::common::{Env, row};
use cortex_testdb::{Backend, TestDb, per_backend};
use serde_json::json;
use std::process::Command;

per_backend!(fill_grows_a_postgres_database_and_numbers_on);

fn fill_grows_a_postgres_database_and_numbers_on(db: &TestDb) {
    let env = Env::new();
    let set = env.dir.path().join("prose");
    std::fs::create_dir_all(&set).unwrap();
    let docs = [
        ("d1", "Sessions", "Sessions moved to PostgreSQL. Redis was dropped. Costs fell by half."),
        ("d2", "Billing", "The billing worker runs nightly. Customers are charged at two. Failures retry."),
        (
            "d3",
            "Certificates",
            "Certificates renew monthly. Certbot runs on the gateway. Alerts fire on expiry.",
        ),
    ];
    let corpus: String = docs
        .iter()
        .map(|(id, title, text)| format!("{}\n", json!({"_id": id, "title": title, "text": text})))
        .collect();
    std::fs::write(set.join("corpus.jsonl"), corpus).unwrap();
    let set = set.to_str().unwrap();
    if db.backend() != Backend::Postgres {
        let out = Command::new(env!("CARGO_BIN_EXE_cortex-bench"))
            .args(["bench", "--fill", set])
            .env_remove("CORTEX_BENCH_POSTGRES")
            .output()
            .unwrap();
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("--postgres"), "{out:?}");
        return;
    }
    let runs = env.dir.path().join("runs");
    let (runs, url) = (runs.to_str().unwrap(), db.db_arg());
    let fill = |size: &str| {
        let args = ["bench", "--fill", set, "--sizes", size, "--dir", runs, "--postgres", url.as_str()];
        String::from_utf8(env.run(&args, &[("CORTEX_EMBEDDER", "none")]).stdout).unwrap()
    };
    let held = |table: &str| -> u64 {
        let line = table.lines().find(|l| l.ends_with("items in the database")).expect(table);
        line.split_whitespace().next().unwrap().parse().unwrap()
    };
    let first = fill("150");
    let rate: f64 = row(&first, &["150"])[1].parse().unwrap();
    assert!(rate > 0.0, "{first}");
    let second = fill("250");
    assert!(row(&second, &["250"])[1].parse::<f64>().unwrap() > 0.0, "{second}");
    assert!(!second.contains("| 150 |"), "only the items not there yet are stored: {second}");
    // Numbered on: items 150 to 249 differ from the first 150 (numbered from 0 again, they would
    // be the same items, found already there, and the database would not grow).
    assert!(held(&second) > held(&first), "{first}\n{second}");
    // Nothing left to store; the database is the one this folder's ids describe.
    let third = fill("250");
    assert!(!third.contains("| 250 |"), "{third}");
    assert_eq!(held(&third), held(&second));
    let ids: u64 = std::fs::read_dir(runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ids"))
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    assert_eq!(ids, 250 * 16);
}
