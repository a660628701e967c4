//! `cortex-bench bench`: the store and find benchmark on a tiny corpus, on SQLite and, given a
//! scratch PostgreSQL database, on it as well; its cold starts run the `cortex` built beside it.

use crate::common::{Env, row};
use cortex_testdb::{Backend, TestDb, per_backend};

per_backend!(store_find_and_cold_start_are_timed_on_each_backend);

fn store_find_and_cold_start_are_timed_on_each_backend(db: &TestDb) {
    let env = Env::new();
    let runs = env.dir.path().join("runs");
    let mut args = vec!["bench", "--sizes", "200", "--queries", "10", "--starts", "1"];
    let (runs, url) = (runs.to_str().unwrap(), db.db_arg());
    args.extend(["--dir", runs]);
    let mut backends = vec!["sqlite"];
    if db.backend() == Backend::Postgres {
        args.extend(["--postgres", url.as_str()]);
        backends.push("postgres");
    }
    let out = env.run(&args, &[("CORTEX_EMBEDDER", "none")]);
    let table = String::from_utf8(out.stdout).unwrap();
    for backend in backends {
        let cells = row(&table, &[backend, "200"]);
        let number = |cell: &str| -> f64 { cell.split_whitespace().next().unwrap().parse().unwrap() };
        assert!(number(cells[2]) > 0.0, "items stored per second: {table}");
        assert!(number(cells[6]) > 0.0, "finds have hits: {table}");
        assert!(number(cells[7]) > 0.0, "a cold start of cortex serve was timed: {table}");
        assert!(number(cells[9]) > 0.0, "the server's memory was read: {table}");
    }
    assert!(!env.memory().exists(), "the memory CORTEX_DB names was not touched");
    assert_eq!(env.left_in_temp(), Vec::<String>::new(), "its temporary folder is removed");
}
