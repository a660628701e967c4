//! `cortex-bench eval` on tiny BEIR-layout sets: every route scored, each conversation searched
//! in its own scope, and the memory `CORTEX_DB` names left alone.

use crate::common::{Env, row};
use serde_json::json;

/// `cortex-bench eval` on a four-document BEIR-layout set: it loads the corpus into its own file
/// (never the memory `CORTEX_DB` names) and scores every route.
#[test]
fn eval_scores_every_route_on_a_beir_set() {
    let env = Env::new();
    let set = env.dir.path().join("tiny");
    std::fs::create_dir_all(set.join("qrels")).unwrap();
    let docs = [
        ("d1", "Sessions", "User sessions moved from Redis to PostgreSQL to cut hosting costs."),
        ("d2", "Billing", "The billing worker charges customers every night at two."),
        ("d3", "Certificates", "TLS certificates for the gateway are renewed by certbot monthly."),
        ("d4", "Pods", "Kubernetes pods restart when they exceed their memory limits."),
    ];
    let corpus: String = docs
        .iter()
        .map(|(id, title, text)| format!("{}\n", json!({"_id": id, "title": title, "text": text})))
        .collect();
    std::fs::write(set.join("corpus.jsonl"), corpus).unwrap();
    let queries =
        [("q1", "where do login sessions live now"), ("q2", "containers killed for using too much RAM")];
    let queries: String =
        queries.iter().map(|(id, text)| format!("{}\n", json!({"_id": id, "text": text}))).collect();
    std::fs::write(set.join("queries.jsonl"), queries).unwrap();
    std::fs::write(set.join("qrels/test.tsv"), "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td4\t1\n").unwrap();

    let out = env.run(&["eval", "--dataset", set.to_str().unwrap()], &[]);
    let table = String::from_utf8_lossy(&out.stdout);
    for route in ["fast", "dense", "auto", "deep"] {
        let [ndcg, ..] = eval_row(&table, route, "all");
        assert!((0.0..=1.0).contains(&ndcg), "{table}");
        if route != "fast" {
            assert!(ndcg > 0.9, "paraphrases are found by meaning: {table}");
        }
    }
    assert!(!env.memory().exists(), "the memory CORTEX_DB names was not touched");
    assert_eq!(env.left_in_temp(), Vec::<String>::new(), "the corpus database and its index are removed");
}

/// nDCG@10, Recall@5, Recall@10, MRR@10 of one row of `cortex-bench eval`'s table.
fn eval_row(table: &str, route: &str, category: &str) -> [f64; 4] {
    let cells = row(table, &[route, category]);
    [3, 4, 5, 6].map(|i| cells[i].parse().unwrap())
}

/// A conversational set: each conversation is its own scope, so a query finds its answer
/// even when another conversation says the same words more often; figures per category.
#[test]
fn eval_searches_each_conversation_in_its_own_scope() {
    let env = Env::new();
    let set = env.dir.path().join("talk");
    std::fs::create_dir_all(set.join("qrels")).unwrap();
    let mut turns = vec![
        (
            "a:D1:1",
            "a",
            "Ann: yesterday the animal shelter near the station finally let me take home a small cat.",
        ),
        ("a:D1:2", "a", "Bob: That is lovely news, Ann."),
    ];
    let loud: Vec<String> =
        (1..=6).map(|i| format!("Cid: shelter cat, shelter cat, shelter cat {i}")).collect();
    for (i, text) in loud.iter().enumerate() {
        turns.push((["b:D1:1", "b:D1:2", "b:D1:3", "b:D1:4", "b:D1:5", "b:D1:6"][i], "b", text));
    }
    let corpus: String = turns
        .iter()
        .map(|(id, conv, text)| {
            format!("{}\n", json!({"_id": id, "title": "", "text": text, "conversation": conv}))
        })
        .collect();
    std::fs::write(set.join("corpus.jsonl"), corpus).unwrap();
    let queries = [
        json!({"_id": "q1", "text": "the shelter cat", "conversation": "a",
               "category_name": "single-hop"}),
        json!({"_id": "q2", "text": "Who told Ann the news was lovely?", "conversation": "a",
               "category_name": "adversarial"}),
    ];
    let queries: String = queries.iter().map(|q| format!("{q}\n")).collect();
    std::fs::write(set.join("queries.jsonl"), queries).unwrap();
    std::fs::write(set.join("qrels/test.tsv"), "query-id\tcorpus-id\tscore\nq1\ta:D1:1\t1\nq2\ta:D1:2\t1\n")
        .unwrap();

    let out = env.run(&["eval", "--dataset", set.to_str().unwrap(), "--routes", "fast,auto"], &[]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("queries of 1 conversations, each searched in its own scope"), "{table}");
    for route in ["fast", "auto"] {
        assert_eq!(eval_row(&table, route, "single-hop")[3], 1.0, "found first in its own scope: {table}");
        assert_eq!(eval_row(&table, route, "all")[2], 1.0, "{table}");
        eval_row(&table, route, "adversarial");
    }
    assert!(!table.contains("| dense |"), "only the routes asked for: {table}");
}
